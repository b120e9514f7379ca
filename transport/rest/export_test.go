package rest

// Internals the external tests check against the OpenAPI document.
var (
	ListParams  = listParams
	QueueParams = queueParams
)

// RequestBodies maps OpenAPI request schemas to the structs the handlers
// decode, so the document's properties can be checked against them.
var RequestBodies = map[string]any{
	"StoreRequest":        createEntityRequest{},
	"UpdateRequest":       updateEntityRequest{},
	"BulkArchiveRequest":  bulkArchiveRequest{},
	"SearchRequest":       searchRequest{},
	"LinkRequest":         createEdgeRequest{},
	"SyncManifestRequest": syncManifestRequest{},
	"SyncFilesRequest":    syncFilesRequest{},
}

// FieldNames lists a struct's JSON field names.
func FieldNames(v any) []string { return fieldNames(v) }
