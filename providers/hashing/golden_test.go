package hashing_test

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"testing"

	"github.com/postgram-go/postgram/providers/hashing"
)

// TestVectorsStable: the vectors are those stores recorded under
// deterministic-v1 since the first release, bit for bit (any change to the
// arithmetic, even its order, would make stored vectors disagree with new
// query vectors). The digests were taken from the original implementation.
func TestVectorsStable(t *testing.T) {
	t.Parallel()
	texts := []string{
		"pgvector HNSW index", "", "a", "Décision PGM-42: we use pgvector HNSW indexes for embeddings.",
		"the quick brown fox jumps over the lazy dog 1234567890 ünïcödé 漢字 emoji 🙂 words",
		"word7 another chunk of text about retrieval word7 another chunk of text about retrieval",
	}
	for _, tc := range []struct {
		dims int
		want string
	}{
		{1536, "be5d7d92745b0612db36f501fc2d60b12414dcbde26729e5d342fc78436c78c0"},
		{256, "30970f8d899c160c0600409c2ff5882d677e361c0bd90f1be280d102440de610"},
		{100, "3f299a67162c6c42d3489bfc3929a4c08fdfb64842fd85f0fb2dcb18858409a9"},
		{7, "583e16c51cbfd7a7273fd3d2eedef21a24eb964938aa3deedb4e8d3520e80095"},
		{64, "65d13d7be551130b92e74f1ae28eefbe9a078c5f9c1265672c40ea4be1a10324"},
	} {
		vs, err := hashing.New(tc.dims).EmbedBatch(context.Background(), texts)
		if err != nil {
			t.Fatal(err)
		}
		h := sha256.New()
		for _, v := range vs {
			for _, x := range v {
				h.Write(binary.LittleEndian.AppendUint32(nil, math.Float32bits(x)))
			}
		}
		got := hex.EncodeToString(h.Sum(nil))
		if got != tc.want {
			t.Errorf("dims %d: digest %s, want %s", tc.dims, got, tc.want)
		}
	}
}
