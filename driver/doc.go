// Package driver is the seam between the postgram library and a storage
// backend, in the manner of database/sql/driver: Storage is the interface
// a backend implements (storage/sqlite and storage/postgres do), and
// storage/storagetest is the conformance suite every implementation must
// pass.
//
// The package also defines the value types both sides share (Entity, Edge,
// APIKey, AuditEntry, the errors, ...); the root package re-exports those
// a user handles under the same names, so an application imports only
// github.com/postgram-go/postgram and a backend, never this package.
// Types that only backends see (KeywordQuery, EmbedJob, BackupSink, ...)
// live here alone.
//
// Every rule (validation, access control, ranking, fusion, retries) stays
// in the library; a backend persists and retrieves candidates. Optional
// interfaces (Notifier, KeyVersioner, Refresher) are those only one
// backend can offer; everything both backends do is part of Storage.
package driver
