package vecscan

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// adviseHuge asks the kernel to back a large, not yet touched array with
// transparent huge pages. Filling the vector index faults in hundreds of
// megabytes; with 4 KiB pages that is one fault per page. Best effort.
func adviseHuge[T any](s []T) {
	if len(s) == 0 {
		return
	}
	size := uintptr(len(s)) * unsafe.Sizeof(s[0])
	if size < 4<<20 {
		return
	}
	base := unsafe.Pointer(&s[0])
	p := uintptr(base)
	lo, hi := (p+4095)&^4095, (p+size)&^4095
	if hi > lo {
		_ = unix.Madvise(unsafe.Slice((*byte)(unsafe.Add(base, lo-p)), hi-lo), unix.MADV_HUGEPAGE)
	}
}
