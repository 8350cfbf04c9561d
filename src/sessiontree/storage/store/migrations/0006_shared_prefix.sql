-- A transcript pulled from the store onto another machine, then synced from there,
-- begins with the lines of the source it was pulled from: those are not stored again.
-- Its source names that base: its lines before base_bytes are, one for one, the base's
-- first base_lines lines, each moved from the project folder move_from to move_to (both
-- NULL: as the base holds them). Their rows are the file's own (offsets, skeletons), but
-- their bytes are the base's: for such a line, block_offset is the offset of the same
-- line in the base, block_at 0 and stored_length its length there.
ALTER TABLE sessiontree.source
  ADD COLUMN base_source_id bigint REFERENCES sessiontree.source,
  ADD COLUMN base_bytes     bigint,
  ADD COLUMN base_lines     int,
  ADD COLUMN move_from      text,
  ADD COLUMN move_to        text;
