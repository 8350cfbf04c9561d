-- The archive: every line of every synced file, verbatim, and what the engine's
-- skeleton scan made of it. Identity is (source, byte offset); nothing is ordered by a
-- clock. docs/ARCHITECTURE.md ("The store") says why each choice was made.

-- One config root of one machine. machine_id is minted once, kept in sessiontree's
-- state folder; the label (host name, or --machine) is for people, never identity.
CREATE TABLE sessiontree.machine (
  machine_id uuid PRIMARY KEY,
  label      text NOT NULL,
  os_user    text NOT NULL,
  first_seen timestamptz NOT NULL DEFAULT now(),
  last_seen  timestamptz NOT NULL DEFAULT now()
);

-- One local file, one generation of it: a file found truncated or rewritten starts a
-- new generation and the old one is kept (superseded_by says by which).
CREATE TABLE sessiontree.source (
  source_id     bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  machine_id    uuid   NOT NULL REFERENCES sessiontree.machine,
  root          text   NOT NULL,  -- the config root on that machine, absolute
  rel_path      text   NOT NULL,  -- relative to root, '/'-separated
  generation    int    NOT NULL DEFAULT 0,
  kind          text   NOT NULL CHECK (kind IN ('transcript', 'subagent', 'history')),
  session_id    text,             -- a transcript's or subagent's session
  synced_bytes  bigint NOT NULL DEFAULT 0,  -- every line before this offset is stored
  synced_lines  int    NOT NULL DEFAULT 0,
  head_sha      bytea,            -- sha256 of the first min(4 KiB, synced_bytes) bytes
  tail_sha      bytea,            -- sha256 of the 4 KiB before synced_bytes
  open_tail     boolean NOT NULL DEFAULT false, -- the last stored line has no newline
  shape         text   NOT NULL,  -- the engine's skeleton shape its skeletons were made in
  superseded_by bigint REFERENCES sessiontree.source,
  created_at    timestamptz NOT NULL DEFAULT now(),
  updated_at    timestamptz NOT NULL DEFAULT now(),
  UNIQUE (machine_id, root, rel_path, generation)
);
CREATE INDEX source_session ON sessiontree.source (session_id);

-- One line of a source, byte for byte (its newline included: a torn last line has
-- none), with its place and the skeleton the engine's scan made of it (msgpack; NULL
-- when the scan kept no line: blank, or damaged beyond reading) and the problems the
-- scan found in it (msgpack; NULL when none).
CREATE TABLE sessiontree.line (
  source_id   bigint NOT NULL REFERENCES sessiontree.source,
  byte_offset bigint NOT NULL,
  line_no     int    NOT NULL,
  length      int    NOT NULL,
  raw         bytea  COMPRESSION lz4 NOT NULL,
  skeleton    bytea,
  problems    bytea,
  type        text,
  uuid        text,
  parent_uuid text,
  PRIMARY KEY (source_id, byte_offset)
);
ALTER TABLE sessiontree.line ALTER COLUMN raw SET STORAGE EXTENDED;

-- Content-addressed bytes (file-history backups, tool-results files, subagent
-- .meta.json, paste-cache/ texts): one row per content, however many machines and sessions hold it.
CREATE TABLE sessiontree.blob (
  sha256 bytea  PRIMARY KEY,
  size   bigint NOT NULL,
  data   bytea  COMPRESSION lz4 NOT NULL
);

-- A file beside the transcripts, as it was on its machine.
CREATE TABLE sessiontree.artifact (
  machine_id uuid   NOT NULL REFERENCES sessiontree.machine,
  root       text   NOT NULL,
  rel_path   text   NOT NULL,
  kind       text   NOT NULL CHECK (kind IN ('file-history', 'tool-result', 'agent-meta', 'paste')),
  session_id text,
  sha256     bytea  NOT NULL REFERENCES sessiontree.blob,
  mode       int    NOT NULL,
  mtime_ns   bigint NOT NULL,
  PRIMARY KEY (machine_id, root, rel_path)
);
CREATE INDEX artifact_session ON sessiontree.artifact (session_id, kind);

-- What a session is, as the engine's listing reads it from its file (msgpack of the
-- listing row), and what only the syncing machine knows (git remote, user).
CREATE TABLE sessiontree.session (
  source_id      bigint PRIMARY KEY REFERENCES sessiontree.source,
  session_id     text   NOT NULL,
  machine_id     uuid   NOT NULL REFERENCES sessiontree.machine,
  os_user        text   NOT NULL,
  cwd            text,
  git_remote     text,
  client_version text,
  title          text,
  updated_at     text,
  info           bytea  NOT NULL,
  info_bytes     bigint NOT NULL  -- the file's size the row was read at
);
CREATE INDEX session_id ON sessiontree.session (session_id);

-- history.jsonl, merged: each distinct line once, whichever machines typed it.
CREATE TABLE sessiontree.history_line (
  sha256     bytea PRIMARY KEY,
  raw        bytea NOT NULL,
  ts         bigint,  -- the line's "timestamp" (ms), for ordering as the client does
  machine_id uuid  NOT NULL REFERENCES sessiontree.machine,
  seq        bigint GENERATED ALWAYS AS IDENTITY
);
CREATE INDEX history_line_order ON sessiontree.history_line (ts, seq);
