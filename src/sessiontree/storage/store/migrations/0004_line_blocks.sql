-- A line's bytes are kept in blocks of consecutive lines (about 32 KiB each, a longer
-- line alone), not one row a line: PostgreSQL compresses a value only past ~2 KiB, so
-- most lines (a few hundred bytes to 2 KiB) were kept as they are; a block of them is
-- compressed whole (lz4), and the keys, paths and ids every line repeats compress away.
-- The line's row says where its bytes are: the block (by the offset of its first
-- line), where in it, and how many (a redacted line is no longer as long as the
-- file's). A block never spans two sync transactions, and a last line stored without
-- its newline is alone in its block, so that replacing it removes its block whole.
CREATE TABLE sessiontree.line_block (
  source_id   bigint NOT NULL REFERENCES sessiontree.source,
  byte_offset bigint NOT NULL,
  raw         bytea  COMPRESSION lz4 NOT NULL,
  PRIMARY KEY (source_id, byte_offset)
);
ALTER TABLE sessiontree.line_block ALTER COLUMN raw SET STORAGE EXTENDED;

ALTER TABLE sessiontree.line
  ADD COLUMN block_offset  bigint,
  ADD COLUMN block_at      int,
  ADD COLUMN stored_length int;
-- (a store made before: each line its own block)
INSERT INTO sessiontree.line_block (source_id, byte_offset, raw)
  SELECT source_id, byte_offset, raw FROM sessiontree.line;
UPDATE sessiontree.line SET block_offset = byte_offset, block_at = 0, stored_length = length(raw);
ALTER TABLE sessiontree.line
  DROP COLUMN raw,
  ALTER COLUMN block_offset SET NOT NULL,
  ALTER COLUMN block_at SET NOT NULL,
  ALTER COLUMN stored_length SET NOT NULL;
