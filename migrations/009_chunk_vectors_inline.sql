-- Keep each chunk's embedding inline in its row again (storage MAIN: the
-- vector is the last value moved out of line, and only when a row would not
-- fit a page, as with 3,072-dimension models), and let a row grow to a full
-- page before its content and tsvector are compressed or moved out of line.
--
-- Migration 004 moved embeddings out of line because the keyword branch then
-- read chunk rows in several probes and inline vectors made those slower.
-- The keyword pool is now one statement reading about 200 rows, while every
-- vector search reads 50 candidate embeddings (the HNSW scan's similarity
-- output, the similarities of keyword candidates) and each out-of-line one
-- costs a TOAST index descent and several TOAST pages. Measured on the
-- 6,000-chunk bench fixture (p95 excluding the provider, two runs each):
-- cold queries 11.4-11.7 ms out of line vs 8.4-8.7 inline, every other
-- profile equal or faster inline.
--
-- Existing rows keep their layout until they are written again; VACUUM FULL
-- chunks (an exclusive lock; it rebuilds the table's indexes) converts them
-- at once.
ALTER TABLE chunks ALTER COLUMN embedding SET STORAGE MAIN;
ALTER TABLE chunks SET (toast_tuple_target = 8160);
