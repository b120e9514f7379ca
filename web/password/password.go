// Package password hashes and checks web-app passwords with argon2id
// (PHC string format), and holds the password policy. The web app and
// pgm-admin (user create, reset-password) share it.
package password

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"golang.org/x/crypto/argon2"
)

// Params are argon2id's costs. The zero value takes the defaults
// (OWASP's recommended minimum): 19 MiB of memory, 2 passes, 1 thread.
type Params struct {
	MemoryKiB uint32
	Time      uint32
	Threads   uint8
}

func (p Params) withDefaults() Params {
	if p.MemoryKiB == 0 {
		p.MemoryKiB = 19 * 1024
	}
	if p.Time == 0 {
		p.Time = 2
	}
	if p.Threads == 0 {
		p.Threads = 1
	}
	return p
}

const (
	saltBytes = 16
	keyBytes  = 32
	// MinLen is the shortest password accepted, in characters.
	MinLen = 12
	// MaxLen bounds the work one sign-in can ask of argon2, in bytes.
	MaxLen = 1024
)

// Hash returns the PHC-encoded argon2id hash of pw:
// $argon2id$v=19$m=…,t=…,p=…$salt$key (unpadded base64).
func Hash(p Params, pw string) (string, error) {
	p = p.withDefaults()
	salt := make([]byte, saltBytes)
	if _, err := rand.Read(salt); err != nil {
		return "", fmt.Errorf("password: salt: %w", err)
	}
	key := argon2.IDKey([]byte(pw), salt, p.Time, p.MemoryKiB, p.Threads, keyBytes)
	enc := base64.RawStdEncoding
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, p.MemoryKiB, p.Time, p.Threads,
		enc.EncodeToString(salt), enc.EncodeToString(key)), nil
}

var errBadHash = errors.New("password: stored hash is not argon2id")

// Check reports whether pw matches the encoded hash, with the costs the
// hash was made with, in constant time.
func Check(encoded, pw string) (bool, error) {
	parts := strings.Split(encoded, "$")
	if len(parts) != 6 || parts[1] != "argon2id" {
		return false, errBadHash
	}
	var v int
	if _, err := fmt.Sscanf(parts[2], "v=%d", &v); err != nil || v != argon2.Version {
		return false, errBadHash
	}
	var m, t uint32
	var th uint8
	if _, err := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d", &m, &t, &th); err != nil || m == 0 || t == 0 || th == 0 || m > 1<<22 || t > 64 {
		return false, errBadHash
	}
	enc := base64.RawStdEncoding
	salt, err := enc.DecodeString(parts[4])
	if err != nil {
		return false, errBadHash
	}
	want, err := enc.DecodeString(parts[5])
	if err != nil || len(want) == 0 || len(want) > 128 {
		return false, errBadHash
	}
	got := argon2.IDKey([]byte(pw), salt, t, m, th, uint32(len(want)))
	return subtle.ConstantTimeCompare(got, want) == 1, nil
}

// Valid checks a new password against the policy: MinLen to MaxLen.
func Valid(pw string) error {
	switch n := utf8.RuneCountInString(pw); {
	case n < MinLen:
		return fmt.Errorf("password: at least %d characters", MinLen)
	case len(pw) > MaxLen:
		return fmt.Errorf("password: at most %d bytes", MaxLen)
	}
	return nil
}
