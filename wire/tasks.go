package wire

import "github.com/postgram-go/postgram"

// TaskRequest is the body of POST /api/tasks.
type TaskRequest struct {
	Content    string         `json:"content"`
	Context    string         `json:"context,omitempty"`
	Status     string         `json:"status,omitempty"`
	DueDate    string         `json:"due_date,omitempty"`
	Tags       []string       `json:"tags,omitempty"`
	Visibility string         `json:"visibility,omitempty"`
	Owner      string         `json:"owner,omitempty"`
	Metadata   map[string]any `json:"metadata,omitempty"`
}

// Input converts the body to the library's TaskInput.
func (r TaskRequest) Input() postgram.TaskInput {
	return postgram.TaskInput{Content: r.Content, Context: r.Context, Status: postgram.Status(r.Status),
		DueDate: r.DueDate, Tags: r.Tags, Visibility: postgram.Visibility(r.Visibility), Owner: r.Owner,
		Metadata: r.Metadata}
}

// TaskUpdateRequest is the body of PATCH /api/tasks/{id}. Absent (or
// null) fields are left unchanged; an empty context or due_date removes
// it. Version is required.
type TaskUpdateRequest struct {
	Version    *int64         `json:"version"`
	Content    *string        `json:"content,omitempty"`
	Context    *string        `json:"context,omitempty"`
	Status     *string        `json:"status,omitempty"`
	DueDate    *string        `json:"due_date,omitempty"`
	Tags       *[]string      `json:"tags,omitempty"`
	Visibility *string        `json:"visibility,omitempty"`
	Owner      *string        `json:"owner,omitempty"`
	Metadata   map[string]any `json:"metadata,omitempty"`
}

// Update converts the body to the library's TaskUpdate at version.
func (r TaskUpdateRequest) Update(version int64) postgram.TaskUpdate {
	return postgram.TaskUpdate{Version: version, Content: r.Content, Context: r.Context, DueDate: r.DueDate,
		Tags: r.Tags, Owner: r.Owner, Metadata: r.Metadata, Status: typed[postgram.Status](r.Status),
		Visibility: typed[postgram.Visibility](r.Visibility)}
}

// CompleteTaskRequest is the body of POST /api/tasks/{id}/complete.
type CompleteTaskRequest struct {
	Version *int64 `json:"version"`
}

// typed converts an optional string to an optional named string type.
func typed[T ~string](s *string) *T {
	if s == nil {
		return nil
	}
	v := T(*s)
	return &v
}
