-- Keep embeddings inline in the chunk row (compressed if that helps)
-- instead of out-of-line TOAST: exact ranking reads every candidate's
-- vector, and a TOAST lookup per row made it several times slower. Large
-- chunk content is moved out of line first.
ALTER TABLE chunks ALTER COLUMN embedding SET STORAGE MAIN;
ALTER TABLE chunks SET (toast_tuple_target = 8160);
