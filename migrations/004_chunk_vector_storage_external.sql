-- Undo 003: with embeddings inline every chunk row filled a page, and the
-- keyword branch (which reads chunk rows by the hundred) became slower than
-- exact vector ranking became faster. Embeddings go back out of line
-- (uncompressed); exact ranking is used only for small filtered sets.
-- Rows keep their current layout until they are next written.
ALTER TABLE chunks ALTER COLUMN embedding SET STORAGE EXTERNAL;
ALTER TABLE chunks RESET (toast_tuple_target);
