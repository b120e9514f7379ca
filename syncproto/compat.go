package syncproto

import "encoding/json"

// The reference (TypeScript) Postgram server and its pgm CLI name some
// fields in camelCase: the diff's toUpload and toDelete, the status
// entries' syncStatus, lastSynced and entityId. The types below write both
// spellings and read either, so that the reference CLI works against this
// server unchanged and this package's client works against either server.

type diffResponseJSON DiffResponse

type diffResponseWire struct {
	diffResponseJSON
	ToUploadCamel []DiffItem `json:"toUpload"`
	ToDeleteCamel []string   `json:"toDelete"`
}

// MarshalJSON writes to_upload and to_delete, and toUpload and toDelete
// beside them.
func (d DiffResponse) MarshalJSON() ([]byte, error) {
	return json.Marshal(diffResponseWire{diffResponseJSON(d), d.ToUpload, d.ToDelete})
}

// UnmarshalJSON reads either spelling (the snake_case one wins when both
// are present).
func (d *DiffResponse) UnmarshalJSON(b []byte) error {
	var w diffResponseWire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*d = DiffResponse(w.diffResponseJSON)
	if d.ToUpload == nil {
		d.ToUpload = w.ToUploadCamel
	}
	if d.ToDelete == nil {
		d.ToDelete = w.ToDeleteCamel
	}
	return nil
}

type fileStatusJSON FileStatus

type fileStatusWire struct {
	fileStatusJSON
	SyncStatusCamel string `json:"syncStatus"`
	LastSyncedCamel string `json:"lastSynced"`
	EntityIDCamel   string `json:"entityId"`
}

// MarshalJSON writes sync_status, last_synced and entity_id, and
// syncStatus, lastSynced and entityId beside them.
func (f FileStatus) MarshalJSON() ([]byte, error) {
	return json.Marshal(fileStatusWire{fileStatusJSON(f), f.SyncStatus, f.LastSynced, f.EntityID})
}

// UnmarshalJSON reads either spelling (the snake_case one wins when both
// are present).
func (f *FileStatus) UnmarshalJSON(b []byte) error {
	var w fileStatusWire
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*f = FileStatus(w.fileStatusJSON)
	if f.SyncStatus == "" {
		f.SyncStatus = w.SyncStatusCamel
	}
	if f.LastSynced == "" {
		f.LastSynced = w.LastSyncedCamel
	}
	if f.EntityID == "" {
		f.EntityID = w.EntityIDCamel
	}
	return nil
}
