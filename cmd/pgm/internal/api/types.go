package api

// The request and response bodies are package wire's, with the library's
// entity, edge and search types inside: the server decodes and encodes the
// same types, so the client cannot drift from it. This file holds only
// what the client builds itself (query parameters).

// ListQuery holds the filters of GET /api/entities. Zero values are not
// sent, so the server's defaults apply.
type ListQuery struct {
	Type            string
	Status          string
	Visibility      string
	Owner           string
	MemoryRole      string
	Tags            []string
	Limit           int
	Offset          int
	IncludeArchived bool
}

// QueueQuery holds the options of GET /api/queue.
type QueueQuery struct {
	IncludeFailures bool
	FailureLimit    int // 0: the server's default
}
