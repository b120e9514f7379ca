// Package parity checks that the two backends answer alike: the same
// entities stored in storage/sqlite and storage/postgres give the same
// search results (both rankings), lists and graph expansions, and a
// workspace moves between them with package transfer. It has no exported
// API; its tests need the PostgreSQL test cluster.
package parity
