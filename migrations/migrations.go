// Package migrations holds the PostgreSQL schema as SQL files, embedded so a
// binary carries its own migrations. storage/postgres applies them with
// jackc/tern under an advisory lock.
//
// Files are named NNN_description.sql and are applied in order, each in its
// own transaction. A file is never edited once released: change the schema
// with a new file.
package migrations

import "embed"

// FS holds the migration files.
//
//go:embed *.sql
var FS embed.FS
