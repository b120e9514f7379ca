package main

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/postgram-go/postgram"
	"github.com/postgram-go/postgram/internal/chunk"
	"github.com/postgram-go/postgram/internal/query"
)

// fixtureVersion is recorded in bench_meta; bump it whenever the generated
// text changes so that stale fixtures are rebuilt rather than reused.
const fixtureVersion = 1

// defaultSeed seeds the vocabulary, the entity texts and the queries.
const defaultSeed = 20240611

// chunkCfg is the client's default chunker (ChunkingConfig zero value):
// 1000 runes with 100 runes of overlap.
var chunkCfg = chunk.Config{Size: 1000, Overlap: 100}

// Rune ranges for generated entity texts: short texts fit in one chunk,
// long ones split into exactly two (checked with the real chunker).
const (
	shortMinRunes, shortMaxRunes = 200, 950
	longMinRunes, longMaxRunes   = 1150, 1650
)

// narrowTag marks the small subset used by the underfilled HNSW profile.
const narrowTag = "narrow"

// topicWords are real words placed at the top of the frequency ranking so
// that common words (and therefore long keyword queries) look like English.
var topicWords = []string{
	"deployment", "database", "latency", "invoice", "roadmap", "customer", "migration", "release",
	"incident", "postmortem", "budget", "forecast", "contract", "renewal", "onboarding", "meeting",
	"sprint", "backlog", "priority", "review", "design", "architecture", "service", "cluster",
	"kubernetes", "postgres", "index", "query", "cache", "replica", "failover", "backup",
	"restore", "monitoring", "alert", "dashboard", "metric", "pipeline", "build", "test",
	"coverage", "security", "audit", "compliance", "policy", "vendor", "procurement", "hiring",
	"interview", "candidate", "feedback", "quarter", "revenue", "pricing", "discount", "churn",
	"retention", "support", "ticket", "escalation", "outage", "rollback", "feature", "flag",
	"experiment", "analytics", "report", "summary", "decision", "proposal", "estimate", "deadline",
	"milestone", "launch", "marketing", "campaign", "newsletter", "webinar", "partner", "integration",
	"api", "endpoint", "schema", "payload", "token", "session", "login", "password",
	"encryption", "certificate", "network", "firewall", "storage", "bucket", "upload", "download",
	"mobile", "android", "browser", "frontend", "backend", "refactor", "bug", "regression",
	"performance", "throughput", "capacity", "scaling", "queue", "worker", "scheduler", "cron",
	"embedding", "vector", "search", "ranking", "relevance", "model", "training", "dataset",
	"label", "annotation", "privacy", "consent", "retention", "legal", "office", "travel",
	"expense", "payroll", "benefits", "vacation", "offsite", "workshop", "training", "mentoring",
	"documentation", "wiki", "runbook", "checklist", "handover", "standup", "retro", "okr",
}

var firstNames = []string{
	"Alice", "Bruno", "Chiara", "Dmitri", "Elena", "Farid", "Greta", "Hiro", "Ines", "Jonas",
	"Kenji", "Lena", "Marco", "Nadia", "Omar", "Paula", "Quentin", "Rosa", "Sven", "Tara",
	"Umar", "Vera", "Wanda", "Xavier", "Yara", "Zoltan", "Amara", "Bjorn", "Carmen", "Dario",
	"Eva", "Felix", "Gustav", "Hanna", "Igor", "Julia", "Karim", "Lucia", "Mateo", "Nora",
	"Olga", "Pavel", "Rania", "Sami", "Tomas", "Ulla", "Viktor", "Wen", "Ximena", "Yusuf",
	"Zara", "Anton", "Beatriz", "Conor", "Dalia", "Emil", "Fatima", "Goran", "Helga", "Ivo",
}

var lastNames = []string{
	"Novak", "Keller", "Rossi", "Ivanova", "Haddad", "Lindqvist", "Tanaka", "Moreau", "Schmidt", "Okafor",
	"Costa", "Weber", "Horvat", "Nakamura", "Dubois", "Fischer", "Kowalski", "Andersen", "Silva", "Petrov",
	"Jansen", "Bauer", "Ferreira", "Yilmaz", "Larsen", "Romano", "Kaur", "Nguyen", "Popescu", "Meyer",
	"Hansen", "Ricci", "Sato", "Varga", "Wagner", "Zhang", "Almeida", "Berg", "Cohen", "Dvorak",
	"Eriksson", "Fontaine", "Gallo", "Herrera", "Ito", "Jovanovic", "Kim", "Lopez", "Marino", "Nielsen",
	"Olsen", "Park", "Quinn", "Reyes", "Santos", "Torres", "Urban", "Vogel", "Walsh", "Zimmermann",
}

var idPrefixes = []string{"PRJ", "OPS", "INC", "TKT", "SEC", "FIN", "HR", "MKT"}

var teamTags = []string{"engineering", "sales", "support", "finance", "ops", "research", "people", "legal"}

var entityTypes = []postgram.EntityType{
	postgram.TypeMemory, postgram.TypeDocument, postgram.TypeProject,
	postgram.TypeTask, postgram.TypeInteraction, postgram.TypePerson,
}

// Vocabulary is the fixed-seed word list the fixture and the queries draw
// from: about 3,000 entries.
type Vocabulary struct {
	// Common holds the ordinary words, most frequent first (texts draw them
	// with a Zipf distribution over this order).
	Common []string
	// Identifiers are ticket-like ids such as PRJ-1234.
	Identifiers []string
	// FirstNames and LastNames make person names.
	FirstNames, LastNames []string
}

// Size returns the number of distinct entries.
func (v *Vocabulary) Size() int {
	return len(v.Common) + len(v.Identifiers) + len(v.FirstNames) + len(v.LastNames)
}

// NewVocabulary builds the vocabulary deterministically from seed: the topic
// words shuffled into the top ranks, then ~2,550 pronounceable synthetic
// words, plus 300 identifiers and the name lists. No entry is an English
// stopword, so the query parser keeps every term.
func NewVocabulary(seed uint64) *Vocabulary {
	r := rand.New(rand.NewPCG(seed, 0x766f636162))
	seen := map[string]bool{}
	var common []string
	add := func(w string) {
		lw := strings.ToLower(w)
		if seen[lw] || query.IsStopwordTerm(w) {
			return
		}
		seen[lw] = true
		common = append(common, w)
	}
	topics := slices.Clone(topicWords)
	r.Shuffle(len(topics), func(i, j int) { topics[i], topics[j] = topics[j], topics[i] })
	for _, w := range topics {
		add(w)
	}
	for _, n := range firstNames {
		seen[strings.ToLower(n)] = true
	}
	for _, n := range lastNames {
		seen[strings.ToLower(n)] = true
	}
	onsets := []string{"b", "c", "d", "f", "g", "h", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z",
		"br", "cr", "dr", "gr", "pl", "st", "tr", "sh", "ch", "qu"}
	vowels := []string{"a", "e", "i", "o", "u", "ai", "ea", "io", "ou"}
	codas := []string{"", "", "n", "r", "s", "l", "x", "t", "m"}
	const synthetic = 2550
	for len(common) < len(topics)+synthetic {
		var b strings.Builder
		for range 2 + r.IntN(2) {
			b.WriteString(onsets[r.IntN(len(onsets))])
			b.WriteString(vowels[r.IntN(len(vowels))])
			b.WriteString(codas[r.IntN(len(codas))])
		}
		add(b.String())
	}
	v := &Vocabulary{Common: common, FirstNames: firstNames, LastNames: lastNames}
	ids := map[string]bool{}
	for len(v.Identifiers) < 300 {
		id := fmt.Sprintf("%s-%d", idPrefixes[r.IntN(len(idPrefixes))], 100+r.IntN(9900))
		if !ids[id] {
			ids[id] = true
			v.Identifiers = append(v.Identifiers, id)
		}
	}
	return v
}

// textGen writes synthetic prose from a vocabulary.
type textGen struct {
	v *Vocabulary
	r *rand.Rand
	z *rand.Zipf
}

func newTextGen(v *Vocabulary, r *rand.Rand) *textGen {
	return &textGen{v: v, r: r, z: rand.NewZipf(r, 1.05, 10, uint64(len(v.Common)-1))}
}

// word returns one token: mostly a Zipf-distributed common word, sometimes
// an identifier or a person's name.
func (g *textGen) word() string {
	switch x := g.r.IntN(100); {
	case x < 3:
		return g.v.Identifiers[g.r.IntN(len(g.v.Identifiers))]
	case x < 6:
		return g.v.FirstNames[g.r.IntN(len(g.v.FirstNames))] + " " + g.v.LastNames[g.r.IntN(len(g.v.LastNames))]
	default:
		return g.v.Common[g.z.Uint64()]
	}
}

// sentence returns 6 to 18 tokens, capitalised, with an occasional comma
// and a full stop.
func (g *textGen) sentence() string {
	n := 6 + g.r.IntN(13)
	var b strings.Builder
	for i := range n {
		w := g.word()
		if i == 0 {
			w = strings.ToUpper(w[:1]) + w[1:]
		} else {
			b.WriteByte(' ')
		}
		b.WriteString(w)
		if i > 0 && i < n-1 && g.r.IntN(10) == 0 {
			b.WriteByte(',')
		}
	}
	b.WriteByte('.')
	return b.String()
}

// text returns prose of paragraphs (3 to 6 sentences, separated by blank
// lines) at most maxRunes long and, unless a single sentence is longer,
// at least minRunes. The text is ASCII, so runes equal bytes.
func (g *textGen) text(minRunes, maxRunes int) string {
	target := minRunes + g.r.IntN(max(1, maxRunes-minRunes+1))
	var b strings.Builder
	inPara, paraLen, misses := 0, 3+g.r.IntN(4), 0
	for {
		s := g.sentence()
		sep := " "
		if b.Len() == 0 {
			sep = ""
		} else if inPara == paraLen {
			sep = "\n\n"
		}
		if n := b.Len() + len(sep) + len(s); b.Len() > 0 && n > target {
			if b.Len() >= minRunes {
				return b.String()
			}
			if n > maxRunes { // try a shorter sentence, a bounded number of times
				if misses++; misses > 20 {
					return b.String()
				}
				continue
			}
		}
		if sep == "\n\n" {
			inPara, paraLen = 0, 3+g.r.IntN(4)
		}
		b.WriteString(sep)
		b.WriteString(s)
		inPara++
		if b.Len() > maxRunes { // a first sentence longer than maxRunes
			return b.String()[:maxRunes]
		}
	}
}

// Fixture describes the deterministic search fixture: which entities are
// long (two chunks) and which carry the narrow tag.
type Fixture struct {
	Seed     uint64
	Entities int
	Chunks   int
	Vocab    *Vocabulary
	long     []bool
	narrow   []bool
}

// NewFixture plans entities entities producing chunks chunks in total:
// chunks-entities of them (spread evenly) are long enough for two chunks,
// the rest fit in one. narrow short entities, spread evenly, get the narrow
// tag. It needs entities <= chunks <= 2*entities.
func NewFixture(seed uint64, entities, chunks, narrow int) (*Fixture, error) {
	if entities < 1 {
		return nil, fmt.Errorf("entities must be positive, got %d", entities)
	}
	if chunks < entities || chunks > 2*entities {
		return nil, fmt.Errorf("chunks must be between entities (%d) and 2×entities (%d), got %d", entities, 2*entities, chunks)
	}
	longN := chunks - entities
	f := &Fixture{Seed: seed, Entities: entities, Chunks: chunks, Vocab: NewVocabulary(seed),
		long: make([]bool, entities), narrow: make([]bool, entities)}
	var short []int
	for i := range entities {
		f.long[i] = (i+1)*longN/entities > i*longN/entities
		if !f.long[i] {
			short = append(short, i)
		}
	}
	narrow = min(narrow, len(short))
	for k := range narrow {
		f.narrow[short[k*len(short)/narrow]] = true
	}
	return f, nil
}

// NarrowCount returns how many entities carry the narrow tag.
func (f *Fixture) NarrowCount() int {
	n := 0
	for _, b := range f.narrow {
		if b {
			n++
		}
	}
	return n
}

// WantChunks returns the chunk count entity i is generated to produce.
func (f *Fixture) WantChunks(i int) int {
	if f.long[i] {
		return 2
	}
	return 1
}

// Entity returns the i-th entity's input. It depends only on the seed and
// i, so entities can be generated in any order or concurrently.
func (f *Fixture) Entity(i int) postgram.StoreInput {
	r := rand.New(rand.NewPCG(f.Seed, uint64(i)+1))
	g := newTextGen(f.Vocab, r)
	lo, hi := shortMinRunes, shortMaxRunes
	if f.long[i] {
		lo, hi = longMinRunes, longMaxRunes
	}
	want := f.WantChunks(i)
	var content string
	for attempt := 0; ; attempt++ {
		content = g.text(lo, hi)
		if len(chunk.Split(content, chunkCfg)) == want || attempt == 50 {
			break
		}
	}
	tags := []string{teamTags[r.IntN(len(teamTags))]}
	if r.IntN(3) == 0 {
		tags = append(tags, strings.ToLower(f.Vocab.Common[r.IntN(40)]))
	}
	if f.narrow[i] {
		tags = append(tags, narrowTag)
	}
	owner := strings.ToLower(f.Vocab.FirstNames[r.IntN(len(f.Vocab.FirstNames))])
	return postgram.StoreInput{
		Type:    entityTypes[i%len(entityTypes)],
		Content: content,
		Owner:   owner,
		Tags:    tags,
		Source:  "postgram-bench",
	}
}

// ContentOfSize returns exactly size bytes of prose for ingest entity i
// (ASCII, so the cut never splits a rune), ending in a non-space byte.
func ContentOfSize(v *Vocabulary, seed uint64, i, size int) string {
	r := rand.New(rand.NewPCG(seed^0x696e67657374, uint64(i)+1))
	g := newTextGen(v, r)
	var b strings.Builder
	for b.Len() < size+1 {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(g.sentence())
	}
	s := []byte(b.String()[:size])
	if s[len(s)-1] == ' ' {
		s[len(s)-1] = '.'
	}
	return string(s)
}

// queryGen produces benchmark queries from the vocabulary. Profiles that
// need never-seen queries pass them through unique.
type queryGen struct {
	v    *Vocabulary
	r    *rand.Rand
	z    *rand.Zipf
	seen map[string]bool
}

func newQueryGen(v *Vocabulary, seed uint64) *queryGen {
	r := rand.New(rand.NewPCG(seed, 0x7175657279))
	// A flatter distribution than the texts': queries favour
	// mid-frequency words over the very commonest ones.
	return &queryGen{v: v, r: r, z: rand.NewZipf(r, 1.01, 20, uint64(len(v.Common)-1)), seen: map[string]bool{}}
}

// unique calls gen until it returns a query not produced before by this
// generator (case-insensitively) and records it.
func (q *queryGen) unique(gen func() string) string {
	for {
		s := gen()
		k := strings.ToLower(s)
		if !q.seen[k] {
			q.seen[k] = true
			return s
		}
	}
}

// short returns a typical 2-4 term query, sometimes with an identifier or a
// person's name.
func (q *queryGen) short() string {
	n := 2 + q.r.IntN(3)
	parts := make([]string, 0, n+1)
	switch q.r.IntN(5) {
	case 0:
		parts = append(parts, q.v.Identifiers[q.r.IntN(len(q.v.Identifiers))])
	case 1:
		parts = append(parts, q.v.FirstNames[q.r.IntN(len(q.v.FirstNames))]+" "+q.v.LastNames[q.r.IntN(len(q.v.LastNames))])
	}
	for len(parts) < n {
		parts = append(parts, q.v.Common[q.z.Uint64()])
	}
	return strings.Join(parts, " ")
}

// commonWords returns n distinct words among the top (most frequent) common
// words, in random order.
func (q *queryGen) commonWords(n, top int) string {
	top = min(top, len(q.v.Common))
	idx := q.r.Perm(top)[:min(n, top)]
	words := make([]string, len(idx))
	for i, k := range idx {
		words[i] = q.v.Common[k]
	}
	return strings.Join(words, " ")
}

// pasted returns n distinct terms drawn from the whole vocabulary, like a
// pasted paragraph.
func (q *queryGen) pasted(n int) string {
	idx := q.r.Perm(len(q.v.Common))[:min(n, len(q.v.Common))]
	words := make([]string, len(idx))
	for i, k := range idx {
		words[i] = q.v.Common[k]
	}
	return strings.Join(words, " ")
}
