"""A store made by an earlier program is carried forward by the migrations, its lines
byte for byte: made here at schema 2 (a row a line, tsvectors with positions), as that
program wrote it, then migrated."""

from __future__ import annotations

import psycopg

from sessiontree.model.records import Line
from sessiontree.storage.store.reads import iter_source_bytes, iter_source_lines, line_bytes
from sessiontree.storage.store.schema import known_version, migrate, store_version
from sessiontree.storage.store.search import words_query

MACHINE = "11111111-1111-4111-8111-111111111111"
LINES = [b'{"type":"user","uuid":"u1","message":{"content":"Weather in Celsius"}}\n',
         b'{"type":"assistant","uuid":"a1","parentUuid":"u1"}\n',
         b'{"type":"user","uuid":"u2","parentUuid":"a1"']  # fmt: skip


def test_a_schema_2_store_migrates_with_its_bytes_and_words(store_dsn: str) -> None:
    with psycopg.connect(store_dsn, autocommit=True) as conn:
        assert migrate(conn, until=2) == [1, 2]
        conn.execute(
            "INSERT INTO sessiontree.machine (machine_id, label, os_user) VALUES (%s, 'm', 'u')",
            (MACHINE,),
        )
        (source_id,) = conn.execute(
            "INSERT INTO sessiontree.source (machine_id, root, rel_path, kind, session_id,"
            " shape, synced_bytes, synced_lines, open_tail) VALUES (%s, '/r', 'projects/p/s.jsonl',"
            " 'transcript', 's', 'x', %s, 3, true) RETURNING source_id",
            (MACHINE, sum(map(len, LINES))),
        ).fetchone()  # fmt: skip
        offset = 0
        for number, raw in enumerate(LINES, 1):
            conn.execute(
                "INSERT INTO sessiontree.line (source_id, byte_offset, line_no, length, raw)"
                " VALUES (%s, %s, %s, %s, %s)",
                (source_id, offset, number, len(raw), raw),
            )
            offset += len(raw)
        conn.execute(
            "INSERT INTO sessiontree.line_text (source_id, byte_offset, part, line_no, kind,"
            " role, session_id, tsv) VALUES (%s, 0, 0, 1, 'prompt', 'user', 's',"
            " to_tsvector('simple', 'Weather in Celsius in'))",
            (source_id,),
        )
        assert migrate(conn) == list(range(3, known_version() + 1))
        assert store_version(conn) == known_version()
        assert b"".join(iter_source_bytes(conn, source_id)) == b"".join(LINES)
        assert list(iter_source_lines(conn, source_id)) == LINES
        offsets = [0, len(LINES[0]), len(LINES[0]) + len(LINES[1])]
        wanted = [Line(3, offsets[2], 0, None), Line(1, offsets[0], 0, None)]
        assert list(line_bytes(conn, source_id, wanted)) == [LINES[2], LINES[0]]
        tsv, words = conn.execute("SELECT tsv::text, words FROM sessiontree.line_text").fetchone()
        assert (tsv, words) == ("'celsius' 'in' 'weather'", 3)
        found = conn.execute(
            "SELECT count(*) FROM sessiontree.line_text WHERE tsv @@ %s::tsquery",
            (words_query("weather cels"),),
        ).fetchone()
        assert found == (1,)
