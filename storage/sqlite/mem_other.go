//go:build !linux

package sqlite

func adviseHuge[T any](s []T) {}
