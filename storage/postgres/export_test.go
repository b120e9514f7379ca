package postgres

// MemEdgeSummaries exposes the in-memory index's edge summaries to the
// external tests, which check that a search's summaries come from it.
var MemEdgeSummaries = (*Store).memEdgeSummaries
