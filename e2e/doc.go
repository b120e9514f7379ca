// Package e2e holds end-to-end tests: the real commands (postgram-server,
// pgm, pgm-admin, postgram-mcp) built and run as processes against the
// embedded SQLite store and a real PostgreSQL, speaking HTTP and stdio as a
// user's programs would. It has no exported API.
package e2e
