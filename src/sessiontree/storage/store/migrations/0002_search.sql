-- Search: one row per searchable part of a line (what model/search_parts.py cuts a
-- record into), its words as a tsvector with the 'simple' configuration (prose and code
-- mixed, many languages: no stemming, identifiers kept whole), and what search filters
-- on. No copy of the text: a hit's snippet is cut from its line, read again.
CREATE TABLE sessiontree.line_text (
  source_id    bigint   NOT NULL,
  byte_offset  bigint   NOT NULL,
  part         smallint NOT NULL,
  line_no      int      NOT NULL,
  kind         text     NOT NULL,
  role         text     NOT NULL,
  tool_name    text,
  tool_use_id  text,
  session_id   text,
  uuid         text,
  type         text,
  ts           timestamptz,
  ts_text      text,
  cwd          text,
  is_sidechain boolean  NOT NULL DEFAULT false,
  tsv          tsvector NOT NULL,
  PRIMARY KEY (source_id, byte_offset, part),
  FOREIGN KEY (source_id, byte_offset) REFERENCES sessiontree.line
);
CREATE INDEX line_text_tsv ON sessiontree.line_text USING gin (tsv);
CREATE INDEX line_text_call ON sessiontree.line_text (source_id, tool_use_id)
  WHERE kind = 'tool_use';

-- Where the text of each source has been indexed up to (every line before the offset).
CREATE TABLE sessiontree.text_state (
  source_id     bigint PRIMARY KEY REFERENCES sessiontree.source,
  indexed_bytes bigint NOT NULL,
  indexed_lines int    NOT NULL
);

-- history.jsonl's entries, searchable (each merged line once).
CREATE TABLE sessiontree.history_text (
  sha256     bytea PRIMARY KEY REFERENCES sessiontree.history_line,
  project    text,
  session_id text,
  ts         timestamptz,
  tsv        tsvector NOT NULL
);
CREATE INDEX history_text_tsv ON sessiontree.history_text USING gin (tsv);
