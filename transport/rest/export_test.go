package rest

// Internals the external tests check against the OpenAPI document.
var (
	ListParams  = listParams
	QueueParams = queueParams
	JobParams   = jobParams
	EventParams = eventParams
)

// FieldNames lists a struct's JSON field names.
func FieldNames(v any) []string { return fieldNames(v) }
