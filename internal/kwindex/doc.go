// Package kwindex is the in-memory keyword index both stores answer the
// keyword branch from (KeywordProbe, KeywordFill, LexemeStats): per
// workspace, every chunk's content and tsvector (encoded, see Encode), per
// lexeme the chunks that hold it, and per lexeme the entities whose head
// holds it. The store keeps it current (SQLite from its change_log,
// PostgreSQL from search_changes) and supplies the entities' attributes.
//
// On SQLite it replaced an FTS5 table (until migration 006): under
// concurrent writes every read transaction started with an emptied page
// cache, and its steps re-read segment pages, chunk rows and entity rows
// for each of the up to 200 chunks of a pool: two thirds of a search's CPU.
// On PostgreSQL the same steps cost about 8 ms of server CPU per search
// (the GIN probes, the fill's recursive statement, the statistics).
//
// A posting list holds chunk slots in ascending order. Slots are assigned
// in chunk rid order (a new chunk gets the largest rid), so walking a list
// visits chunks in rid order, the order FTS5 yielded them in, and the
// probes' "first Limit matches" are the same chunks as before. A deleted
// chunk leaves a dead slot behind in the lists it was in; the set is
// rebuilt when dead slots outnumber live ones, or when a chunk arrives out
// of rid order (another process's import, a reused rid).
package kwindex
