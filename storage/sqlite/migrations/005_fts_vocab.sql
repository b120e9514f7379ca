-- Document counts per keyword-index token (one token per workspace and
-- lexeme), so that estimating how common a query term is reads one
-- b-tree entry instead of counting matches.
CREATE VIRTUAL TABLE chunk_fts_vocab USING fts5vocab (chunk_fts, row);
