//go:build !linux

package vecscan

func adviseHuge[T any](s []T) {}
