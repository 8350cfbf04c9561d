-- Search keeps each part's words, not where they stand: a tsvector without positions
-- (strip) is a third smaller, parses faster and is made by the sync in C-speed steps
-- (positions cost a Python step per word, most of a sync's time). A phrase ("weather.py"
-- is "weather" then "py") is checked against the part's text, read again for its
-- snippet anyway; parts are ranked by their distinct words (fewer: the words searched
-- for stand out more), kept here so that ranking reads no tsvector.
ALTER TABLE sessiontree.line_text ADD COLUMN words int NOT NULL DEFAULT 0;
UPDATE sessiontree.line_text SET tsv = strip(tsv), words = length(tsv);
UPDATE sessiontree.history_text SET tsv = strip(tsv);
