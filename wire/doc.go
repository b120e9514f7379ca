// Package wire holds the JSON shapes of Postgram's REST API (DESIGN.md
// §8): the request bodies, the response envelopes and the conversions
// between them and the library's types. The server (transport/rest)
// decodes and encodes with them, the pgm client sends and reads them and
// the MCP tools' full responses reuse them, so one definition serves every
// surface; the OpenAPI document is checked against them field by field.
//
// Entities, edges and search results travel in the library's own types
// (postgram.Entity, postgram.Edge, postgram.SearchResult), whose JSON tags
// are the wire format; this package adds what only exists on the wire.
// Sync has its own protocol package, syncproto.
package wire
