package wire

import (
	"github.com/google/uuid"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/transport/apierror"
)

// EntityResponse is {entity}: the answer of every single-entity route.
type EntityResponse struct {
	Entity *postgram.Entity `json:"entity"`
}

// StoreRequest is the body of POST /api/entities.
type StoreRequest struct {
	Type           string         `json:"type"`
	Content        string         `json:"content"`
	Visibility     string         `json:"visibility,omitempty"`
	Owner          string         `json:"owner,omitempty"`
	Status         string         `json:"status,omitempty"`
	Tags           []string       `json:"tags,omitempty"`
	Source         string         `json:"source,omitempty"`
	Metadata       map[string]any `json:"metadata,omitempty"`
	SkipExtraction bool           `json:"skip_extraction,omitempty"`
}

// Input converts the body to the library's StoreInput.
func (r StoreRequest) Input() postgram.StoreInput {
	return postgram.StoreInput{
		Type:           postgram.EntityType(r.Type),
		Content:        r.Content,
		Visibility:     postgram.Visibility(r.Visibility),
		Owner:          r.Owner,
		Status:         postgram.Status(r.Status),
		Tags:           r.Tags,
		Source:         r.Source,
		Metadata:       r.Metadata,
		SkipExtraction: r.SkipExtraction,
	}
}

// UpdateRequest is the body of PATCH /api/entities/{id}. Absent (or null)
// fields are left unchanged; metadata is shallow-merged, a key set to null
// removing it. Version is required.
type UpdateRequest struct {
	Version    *int64         `json:"version"`
	Content    *string        `json:"content,omitempty"`
	Visibility *string        `json:"visibility,omitempty"`
	Owner      *string        `json:"owner,omitempty"`
	Status     *string        `json:"status,omitempty"`
	Tags       *[]string      `json:"tags,omitempty"`
	Source     *string        `json:"source,omitempty"`
	Metadata   map[string]any `json:"metadata,omitempty"`
}

// Update converts the body to the library's UpdateInput at version.
func (r UpdateRequest) Update(version int64) postgram.UpdateInput {
	return postgram.UpdateInput{Version: version, Content: r.Content, Owner: r.Owner, Tags: r.Tags,
		Source: r.Source, Metadata: r.Metadata, Visibility: typed[postgram.Visibility](r.Visibility),
		Status: typed[postgram.Status](r.Status)}
}

// DeleteResponse is {id, deleted: true}: the answer of a delete.
type DeleteResponse struct {
	ID      uuid.UUID `json:"id"`
	Deleted bool      `json:"deleted"`
}

// EntityList is a page of entities: the answer of GET /api/entities and
// GET /api/tasks.
type EntityList = postgram.ListPage

// BulkArchiveRequest is the body of POST /api/entities/bulk/archive.
type BulkArchiveRequest struct {
	IDs []string `json:"ids"`
}

// BulkArchived is an entity a bulk archive archived.
type BulkArchived struct {
	ID string `json:"id"`
}

// BulkFailed is an entity a bulk archive could not archive, with the
// error's code and message.
type BulkFailed struct {
	ID      string        `json:"id"`
	Code    apierror.Code `json:"code"`
	Message string        `json:"message"`
}

// BulkArchiveResponse is the answer of a bulk archive: every id lands in
// exactly one of the lists.
type BulkArchiveResponse struct {
	Archived []BulkArchived `json:"archived"`
	Failed   []BulkFailed   `json:"failed"`
}
