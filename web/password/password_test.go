package password

import (
	"strings"
	"testing"
)

func TestPasswordHash(t *testing.T) {
	t.Parallel()
	p := Params{MemoryKiB: 1024, Time: 1, Threads: 1}
	h, err := Hash(p, "correct horse battery")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(h, "$argon2id$v=19$m=1024,t=1,p=1$") {
		t.Fatalf("hash %q", h)
	}
	if h2, _ := Hash(p, "correct horse battery"); h2 == h {
		t.Fatal("two hashes of one password are equal: no salt")
	}
	for pw, want := range map[string]bool{"correct horse battery": true, "correct horse batterY": false, "": false} {
		if ok, err := Check(h, pw); err != nil || ok != want {
			t.Errorf("Check(%q) = %v, %v; want %v", pw, ok, err, want)
		}
	}
	for _, bad := range []string{"", "plain", "$argon2i$v=19$m=1,t=1,p=1$c2FsdA$aGFzaA", "$argon2id$v=19$m=99999999,t=1,p=1$c2FsdA$aGFzaA",
		"$argon2id$v=19$m=1024,t=1,p=1$!!$aGFzaA"} {
		if _, err := Check(bad, "x"); err == nil {
			t.Errorf("checkPassword accepted the hash %q", bad)
		}
	}
}

func TestValid(t *testing.T) {
	t.Parallel()
	for pw, ok := range map[string]bool{"short": false, "twelve chars": true, "ééééééééééé": false, strings.Repeat("x", MaxLen+1): false} {
		if err := Valid(pw); (err == nil) != ok {
			t.Errorf("Valid(%q...) = %v", pw[:min(len(pw), 12)], err)
		}
	}
}
