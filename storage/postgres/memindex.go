package postgres

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/internal/entcache"
	"github.com/postgram-go/postgram/internal/kwindex"
	"github.com/postgram-go/postgram/internal/vecscan"
)

// With Config.MemoryIndex the store keeps, per workspace it searches, an
// in-process copy of the workspace's search data: every chunk's vector,
// text and tsvector, every entity's filter attributes and head. It ranks
// vector searches on it exactly (internal/vecscan, the SQLite store's scan)
// and answers the keyword probe, fill and lexeme statistics from the SQLite
// store's keyword index (internal/kwindex) instead of asking PostgreSQL: the
// HNSW walk and the keyword fill were most of PostgreSQL's CPU per search,
// and HNSW recall falls on large, crowded sets. The entities searches
// return are cached too (entcache, read in GetEntities), dropped as
// search_changes names them.
//
// The copy follows search_changes (migrations 020 to 022), which triggers fill in
// the writing transactions. A search first reads the rows written since the
// copy's snapshot (one statement; concurrent searches share one read that
// started after they arrived), so every commit that finished before a
// search began is in the copy it ranks on: a write is findable at once, in
// this process and in every other. See the migration for why rows are read
// by transaction id and snapshot rather than by number.
//
// A workspace's copy loads in the background on its first search (one
// REPEATABLE READ transaction); until it is ready, and whenever it cannot be
// kept current, searches go to PostgreSQL as before.

// memState is a copy's state.
type memState int

const (
	memLoading memState = iota
	memReady
	memFailed // the load or a catch-up failed: retried after memRetryAfter
)

const (
	// memRetryAfter is how long a failed copy waits before loading again.
	memRetryAfter = 30 * time.Second
	// memReloadAfter: a copy not caught up for this long loads again
	// (search_changes keeps an hour; see pruneSearchChanges).
	memReloadAfter = 30 * time.Minute
	// memReloadBacklog is the number of changes above which loading again
	// is cheaper than applying them one by one.
	memReloadBacklog = 20_000
	// searchChangesKeep is how long after its transaction ended a
	// search_changes row is kept.
	searchChangesKeep = time.Hour
)

// memIndex holds the copies.
type memIndex struct {
	s       *Store
	workers int
	scans   atomic.Int32 // vector scans running now

	ents *entcache.Cache // the entities searches returned (GetEntities)

	mu     sync.Mutex
	spaces map[string]*memSpace
}

func newMemIndex(s *Store) *memIndex {
	return &memIndex{s: s, workers: runtime.GOMAXPROCS(0), spaces: map[string]*memSpace{},
		ents: entcache.New(s.cfg.EntityCacheBytes)}
}

// memSpace is one workspace's copy.
type memSpace struct {
	ws   string
	half bool // vectors in half precision (Config.MemoryIndexHalf)
	gate freshGate

	// reserve, while a load fills the copy, is the workspace's chunk
	// count: the first vector set made reserves that many slots.
	reserve int

	mu       sync.RWMutex // guards everything below
	state    memState
	failedAt time.Time
	loadErr  error      // why the last load failed
	snap     pgSnapshot // what the copy reflects
	caughtUp time.Time  // when snap was taken
	ents     []memEnt   // by slot
	entSlot  map[uuid.UUID]int32
	free     []int32
	sets     map[int64]*vecscan.Set // by model id
	kw       *kwindex.Set           // every chunk's text, for the keyword branch
	heads    kwindex.Heads          // the entities' heads, by lexeme
	masks    *kwindex.Masks         // recent filters' admitted entities
	chunks   map[uuid.UUID]memChunk
	nextRID  int64
	// edges holds each entity's edges (both directions) for the summaries
	// a search's results carry; rels interns their relation names.
	edges map[uuid.UUID][]memEdge
	rels  map[string]string
	// attrGen counts changes of entities already held (attributes a
	// filter reads, a drop): such a change may admit or refuse vectors
	// under a filter, so the vector sets' remembered results
	// (vecscan.Set.TopKCached) are not reused across it. A new entity's
	// vectors are changes of the sets themselves.
	attrGen uint64
}

// memEdge is one edge as seen from one endpoint: its relation and the
// entity at the other end.
type memEdge struct {
	rel   string
	other uuid.UUID
}

// memEnt is an entity as filters and the keyword index see it.
type memEnt struct {
	live bool
	kwindex.Entity
}

// memChunk is where a chunk is held: its rid in the keyword set and, when
// it has a vector (model ≠ 0), in the model's vector set.
type memChunk struct {
	rid   int64
	model int64
}

func newMemContent(sp *memSpace) {
	sp.ents, sp.free = nil, nil
	sp.entSlot = map[uuid.UUID]int32{}
	sp.sets = map[int64]*vecscan.Set{}
	sp.kw, sp.heads = kwindex.New(), nil
	sp.masks = &kwindex.Masks{}
	sp.chunks = map[uuid.UUID]memChunk{}
	sp.edges, sp.rels = map[uuid.UUID][]memEdge{}, map[string]string{}
}

// addEdge records edge source -(rel)-> target at those of its endpoints
// keep admits (every endpoint when keep is nil).
func (sp *memSpace) addEdge(source, target uuid.UUID, rel string, keep map[uuid.UUID]bool) {
	r, ok := sp.rels[rel]
	if !ok {
		r = strings.Clone(rel)
		sp.rels[r] = r
	}
	if keep == nil || keep[source] {
		sp.edges[source] = append(sp.edges[source], memEdge{rel: r, other: target})
	}
	if keep == nil || keep[target] {
		sp.edges[target] = append(sp.edges[target], memEdge{rel: r, other: source})
	}
}

// memEdgeRow is an edge as read.
type memEdgeRow struct {
	source, target uuid.UUID
	rel            string
}

func scanMemEdges(rows pgx.Rows, put func(memEdgeRow)) error {
	defer rows.Close()
	var e memEdgeRow
	for rows.Next() {
		if err := rows.Scan(&e.source, &e.target, &e.rel); err != nil {
			return err
		}
		put(e)
	}
	return rows.Err()
}

// edgeSummaries counts each id's edges whose other end admitted (a slot
// mask) admits, by relation: the summaries edgeSummaries reads in SQL, in
// its order (most edges first, then by relation). The caller holds sp.mu.
func (sp *memSpace) edgeSummaries(ids []uuid.UUID, admitted []bool) map[uuid.UUID]driver.EdgeSummary {
	out := make(map[uuid.UUID]driver.EdgeSummary, len(ids))
	for _, id := range ids {
		if _, done := out[id]; done {
			continue
		}
		var sum driver.EdgeSummary
		for _, e := range sp.edges[id] {
			slot, ok := sp.entSlot[e.other]
			if !ok || int(slot) >= len(admitted) || !admitted[slot] {
				continue
			}
			sum.Count++
			i := slices.IndexFunc(sum.Relations, func(rc driver.RelationCount) bool { return rc.Relation == e.rel })
			if i < 0 {
				sum.Relations = append(sum.Relations, driver.RelationCount{Relation: e.rel})
				i = len(sum.Relations) - 1
			}
			sum.Relations[i].Count++
		}
		if sum.Count == 0 {
			continue // SQL returns no row for it
		}
		slices.SortFunc(sum.Relations, func(a, b driver.RelationCount) int {
			if a.Count != b.Count {
				return b.Count - a.Count
			}
			return strings.Compare(a.Relation, b.Relation)
		})
		out[id] = sum
	}
	return out
}

// pgSnapshot is a pg_snapshot: transactions below xmin had ended, those at
// or above xmax had not begun, and xip lists those in between that were
// still running.
type pgSnapshot struct {
	xmin, xmax uint64
	xip        []uint64
}

// parseSnapshot reads pg_snapshot's text form, "xmin:xmax:xip,xip,...".
func parseSnapshot(s string) (pgSnapshot, error) {
	parts := strings.Split(s, ":")
	if len(parts) != 3 {
		return pgSnapshot{}, fmt.Errorf("snapshot %q: want xmin:xmax:xip", s)
	}
	var snap pgSnapshot
	var err error
	if snap.xmin, err = strconv.ParseUint(parts[0], 10, 64); err != nil {
		return pgSnapshot{}, fmt.Errorf("snapshot %q: %w", s, err)
	}
	if snap.xmax, err = strconv.ParseUint(parts[1], 10, 64); err != nil {
		return pgSnapshot{}, fmt.Errorf("snapshot %q: %w", s, err)
	}
	if parts[2] != "" {
		for _, x := range strings.Split(parts[2], ",") {
			v, err := strconv.ParseUint(x, 10, 64)
			if err != nil {
				return pgSnapshot{}, fmt.Errorf("snapshot %q: %w", s, err)
			}
			snap.xip = append(snap.xip, v)
		}
	}
	return snap, nil
}

// same reports whether p and q are the same snapshot (a load or another
// catch-up has not moved the copy on meanwhile).
func (p pgSnapshot) same(q pgSnapshot) bool {
	return p.xmin == q.xmin && p.xmax == q.xmax && slices.Equal(p.xip, q.xip)
}

// pending returns the parameters of the rows written by transactions snap
// did not see as ended: xid ≥ xmax, or xid in xip.
func (p pgSnapshot) pending() (string, []string) {
	xip := make([]string, len(p.xip))
	for i, x := range p.xip {
		xip[i] = strconv.FormatUint(x, 10)
	}
	return strconv.FormatUint(p.xmax, 10), xip
}

// freshGate lets concurrent callers share a catch-up: each needs one that
// started after it arrived, and every caller waiting when one starts can
// use it.
type freshGate struct {
	mu      sync.Mutex
	cond    *sync.Cond
	running bool
	started uint64
	done    uint64 // the last catch-up that succeeded
	waiting int    // callers waiting for a running catch-up
}

// await runs or joins a catch-up (fn) that started after the call.
func (g *freshGate) await(fn func() error) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.cond == nil {
		g.cond = sync.NewCond(&g.mu)
	}
	need := g.started + 1
	for g.done < need {
		if g.running {
			g.waiting++
			g.cond.Wait()
			g.waiting--
			continue
		}
		g.running = true
		g.started++
		mine := g.started
		g.mu.Unlock()
		err := fn()
		g.mu.Lock()
		g.running = false
		g.cond.Broadcast()
		if err != nil {
			return err
		}
		g.done = max(g.done, mine)
	}
	return nil
}

// memMark marks a context whose operation began with Refresh: each
// workspace's copy catches up once under it.
type memMark struct {
	mu    sync.Mutex
	fresh map[string]bool
}

type memMarkKey struct{}

// Refresh implements driver.Refresher. With Config.MemoryIndex, the
// reads of one search under the returned context bring a workspace's copy
// up to date once (the first of them), not each; without, it returns ctx.
func (s *Store) Refresh(ctx context.Context) (context.Context, error) {
	if s.mem == nil {
		return ctx, nil
	}
	return context.WithValue(ctx, memMarkKey{}, &memMark{fresh: map[string]bool{}}), nil
}

// ready returns workspace ws's copy brought up to date, or nil when it is
// not ready (loading, failed, turned off): then the caller asks PostgreSQL.
func (m *memIndex) ready(ctx context.Context, ws string) *memSpace {
	if m == nil {
		return nil
	}
	m.mu.Lock()
	sp := m.spaces[ws]
	if sp == nil {
		sp = &memSpace{ws: ws, half: m.s.cfg.MemoryIndexHalf}
		m.spaces[ws] = sp
		m.startLoad(sp)
		m.mu.Unlock()
		return nil
	}
	m.mu.Unlock()
	sp.mu.RLock()
	state, failedAt, caughtUp := sp.state, sp.failedAt, sp.caughtUp
	sp.mu.RUnlock()
	switch {
	case state == memLoading:
		return nil
	case state == memFailed:
		if time.Since(failedAt) >= memRetryAfter {
			m.reload(sp)
		}
		return nil
	case time.Since(caughtUp) > memReloadAfter:
		// Rows it has not read may have been pruned.
		m.reload(sp)
		return nil
	}
	mark, _ := ctx.Value(memMarkKey{}).(*memMark)
	if mark != nil {
		mark.mu.Lock()
		done := mark.fresh[ws]
		mark.mu.Unlock()
		if done {
			return sp
		}
	}
	if err := sp.gate.await(func() error { return m.catchUp(ctx, sp) }); err != nil {
		if ctx.Err() == nil {
			m.s.log.Warn("postgres: in-memory index could not catch up; searching in PostgreSQL", "workspace", ws, "error", err)
			sp.mu.Lock()
			if sp.state == memReady {
				sp.state, sp.failedAt = memFailed, time.Now()
			}
			sp.mu.Unlock()
		}
		return nil
	}
	sp.mu.RLock()
	ok := sp.state == memReady
	sp.mu.RUnlock()
	if !ok {
		return nil // a catch-up found a reset and started a load
	}
	if mark != nil {
		mark.mu.Lock()
		mark.fresh[ws] = true
		mark.mu.Unlock()
	}
	return sp
}

// entityCache returns the entity cache for a read of workspace ws under a
// search's context (Refresh) once ws's index is ready and caught up under
// it, or nil: then the caller reads PostgreSQL (other reads gain nothing
// from a catch-up that costs a statement too).
func (m *memIndex) entityCache(ctx context.Context, ws string) *entcache.Cache {
	if m == nil || !m.ents.Enabled() {
		return nil
	}
	if mark, _ := ctx.Value(memMarkKey{}).(*memMark); mark == nil || m.ready(ctx, ws) == nil {
		return nil
	}
	return m.ents
}

// reload marks sp loading and starts a load, unless one is running.
func (m *memIndex) reload(sp *memSpace) {
	sp.mu.Lock()
	if sp.state == memLoading {
		sp.mu.Unlock()
		return
	}
	sp.state = memLoading
	sp.mu.Unlock()
	m.mu.Lock()
	m.startLoad(sp)
	m.mu.Unlock()
}

// startLoad loads sp in the background. The caller holds m.mu (so Close's
// wait sees the goroutine) and has set sp's state to memLoading.
func (m *memIndex) startLoad(sp *memSpace) {
	m.s.bg.Add(1)
	go func() {
		defer m.s.bg.Done()
		start := time.Now()
		n, err := m.load(m.s.bgCtx, sp)
		if err != nil {
			sp.mu.Lock()
			sp.state, sp.failedAt, sp.loadErr = memFailed, time.Now(), err
			sp.mu.Unlock()
			if m.s.bgCtx.Err() == nil {
				m.s.log.Warn("postgres: loading the in-memory index failed; searching in PostgreSQL", "workspace", sp.ws, "error", err)
			}
			return
		}
		st, _ := m.s.MemoryIndexStatus(sp.ws)
		shape := memIndexShape{Vectors: st.Vectors, VectorBytes: st.VectorBytes, Half: sp.half,
			Candidates: m.s.cfg.MemoryIndexCandidates, MemoryLimit: debug.SetMemoryLimit(-1)}
		m.s.log.Info("postgres: in-memory index loaded", "workspace", sp.ws, "chunks", n, "vector_bytes", shape.VectorBytes,
			"took", time.Since(start).Round(time.Millisecond))
		for _, a := range memIndexAdvice(shape) {
			m.s.log.Warn("postgres: "+a, "workspace", sp.ws)
		}
	}()
}

// memEntityCols are an entity's columns the copy holds, read in binary
// (memBinary: pgx knows no tsvector type, so it would ask for the head in
// text).
const memEntityCols = `id, type, status, visibility, owner, tags, coalesce(memory_role, ''), client_id, updated_at, head`

// memChunkCols are a chunk's columns the copy holds, read in binary.
const memChunkCols = `id, entity_id, coalesce(model_id, 0), embedding, content, tsv`

var memBinary = pgx.QueryResultFormats{1, 1, 1, 1, 1, 1, 1, 1, 1, 1}

// load reads the workspace's entities and vectors in one snapshot and
// makes them the copy.
func (m *memIndex) load(ctx context.Context, sp *memSpace) (int, error) {
	ctx = withWS(ctx, sp.ws)
	next := &memSpace{ws: sp.ws, half: sp.half}
	newMemContent(next)
	start := time.Now()
	var snapText string
	n := 0
	err := pgx.BeginTxFunc(ctx, m.s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		if err := tx.QueryRow(ctx, "SELECT pg_current_snapshot()::text").Scan(&snapText); err != nil {
			return err
		}
		// The chunk count (ranking's corpus statistics: folded and
		// pending), so that the vectors' arrays are allocated once.
		if err := tx.QueryRow(ctx, `SELECT coalesce((SELECT chunks FROM lexeme_stats WHERE workspace_id = $1 AND lexeme = ''), 0)
			+ coalesce((SELECT sum(sign) FROM lexeme_stats_delta WHERE workspace_id = $1), 0)`, sp.ws).Scan(&next.reserve); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, "SELECT "+memEntityCols+" FROM entities WHERE workspace_id = $1", memBinary, sp.ws)
		if err != nil {
			return err
		}
		if err := scanMemEntities(rows, next.putEntity); err != nil {
			return err
		}
		// In id order: ids are UUIDv7, so the keyword set's slots follow
		// the chunks' age, as the SQLite store's follow their rids.
		rows, err = tx.Query(ctx, "SELECT "+memChunkCols+" FROM chunks WHERE workspace_id = $1 ORDER BY id", memBinary[:6], sp.ws)
		if err != nil {
			return err
		}
		var err2 error
		if n, err2 = loadChunks(rows, next); err2 != nil {
			return err2
		}
		rows, err = tx.Query(ctx, memEdgeSQL, sp.ws)
		if err != nil {
			return err
		}
		return scanMemEdges(rows, func(e memEdgeRow) { next.addEdge(e.source, e.target, e.rel, nil) })
	})
	if err != nil {
		return 0, fmt.Errorf("postgres: load the in-memory index: %w", mapErr(err))
	}
	snap, err := parseSnapshot(snapText)
	if err != nil {
		return 0, fmt.Errorf("postgres: load the in-memory index: %w", err)
	}
	sp.mu.Lock()
	m.ents.ClearWorkspace(sp.ws) // changes while it was not ready were not followed
	sp.ents, sp.entSlot, sp.free, sp.sets, sp.chunks, sp.nextRID = next.ents, next.entSlot, next.free, next.sets, next.chunks, next.nextRID
	sp.kw, sp.heads, sp.masks = next.kw, next.heads, next.masks
	sp.edges, sp.rels = next.edges, next.rels
	sp.snap, sp.caughtUp, sp.state = snap, start, memReady
	sp.mu.Unlock()
	return n, nil
}

// memChunkRow is a chunk as read: its text, and its vector when it has
// one (model ≠ 0).
type memChunkRow struct {
	id, entity uuid.UUID
	model      int64
	vec        []float32
	content    string
	tsv        []byte // encoded (kwindex.Encode)
}

// scanMemEntities reads rows of memEntityCols (in binary).
func scanMemEntities(rows pgx.Rows, put func(kwindex.Entity)) error {
	defer rows.Close()
	for rows.Next() {
		var e kwindex.Entity
		v := &e.FilterView
		var typ, status, vis string
		var updated time.Time
		if err := rows.Scan(&e.ID, &typ, &status, &vis, &v.Owner, &v.Tags, &v.MemoryRole, &v.ClientID, &updated, nil); err != nil {
			return err
		}
		v.Type, v.Status, v.Visibility, v.UpdatedAt = driver.EntityType(typ), driver.Status(status), driver.Visibility(vis), updated.UnixMicro()
		head, err := encodeTSVectorBinary(rows.RawValues()[9])
		if err != nil {
			return fmt.Errorf("head of entity %s: %w", e.ID, err)
		}
		e.Head, e.HeadLen = head, kwindex.Length(head)
		put(e)
	}
	return rows.Err()
}

// scanMemChunks reads rows of memChunkCols (in binary). With vecDst, each
// row's vector is decoded into the empty slice vecDst returns for its
// dimensions (a load reuses a few batches' arenas, and so makes no garbage
// of 6 KB a chunk); without, each row's vector is its own.
func scanMemChunks(rows pgx.Rows, vecDst func(dims int) []float32, put func(memChunkRow)) error {
	defer rows.Close()
	for rows.Next() {
		var c memChunkRow
		if err := rows.Scan(&c.id, &c.entity, &c.model, nil, &c.content, nil); err != nil {
			return err
		}
		if raw := rows.RawValues()[3]; raw != nil {
			var dst []float32
			if vecDst != nil && len(raw) >= 2 {
				dst = vecDst(int(binary.BigEndian.Uint16(raw)))
			}
			v, err := decodeVectorBinary(raw, dst)
			if err != nil {
				return fmt.Errorf("chunk %s: %w", c.id, err)
			}
			c.vec = v
		}
		tsv, err := encodeTSVectorBinary(rows.RawValues()[5])
		if err != nil {
			return fmt.Errorf("chunk %s: %w", c.id, err)
		}
		c.tsv = tsv
		put(c)
	}
	return rows.Err()
}

// putEntity adds or updates an entity. The caller holds sp.mu.
func (sp *memSpace) putEntity(e kwindex.Entity) {
	if s, ok := sp.entSlot[e.ID]; ok {
		if !sp.ents[s].FilterView.Equal(&e.FilterView) {
			sp.attrGen++
		}
		sp.heads = sp.heads.Index(s, sp.ents[s].Head, e.Head)
		sp.ents[s] = memEnt{live: true, Entity: e}
		sp.masks.Changed(s, sp.view)
		return
	}
	var s int32
	if n := len(sp.free); n > 0 {
		s, sp.free = sp.free[n-1], sp.free[:n-1]
		sp.ents[s] = memEnt{live: true, Entity: e}
	} else {
		s = int32(len(sp.ents))
		sp.ents = append(sp.ents, memEnt{live: true, Entity: e})
	}
	sp.entSlot[e.ID] = s
	sp.heads = sp.heads.Index(s, nil, e.Head)
	sp.masks.Changed(s, sp.view)
}

// dropEntity forgets an entity; its slot is reused once free is merged
// (the caller does that after dropping its chunks). The caller holds sp.mu.
func (sp *memSpace) dropEntity(id uuid.UUID, freed *[]int32) {
	s, ok := sp.entSlot[id]
	if !ok {
		return
	}
	delete(sp.entSlot, id)
	sp.heads = sp.heads.Index(s, sp.ents[s].Head, nil)
	sp.ents[s] = memEnt{}
	sp.attrGen++ // its slot may go to another entity
	sp.masks.Changed(s, sp.view)
	*freed = append(*freed, s)
}

// putChunk stores a chunk, if its entity is known: its text in the
// keyword set, and its vector, if it has one, in its model's set. It
// reports whether it stored a vector. The caller holds sp.mu and has
// removed the chunk's earlier state.
func (sp *memSpace) putChunk(c memChunkRow) bool {
	slot, ok := sp.entSlot[c.entity]
	if !ok {
		return false
	}
	sp.nextRID++ // above every rid so far: the keyword set stays in order
	rid := sp.nextRID
	sp.kw.Add(kwindex.Doc{RID: rid, Chunk: c.id, Ent: slot, Content: c.content, TSV: c.tsv})
	mc := memChunk{rid: rid}
	defer func() { sp.chunks[c.id] = mc }()
	if len(c.vec) == 0 || c.model == 0 {
		return false
	}
	vs := sp.sets[c.model]
	if vs == nil {
		if sp.half {
			vs = vecscan.NewHalf(len(c.vec))
		} else {
			vs = vecscan.New(len(c.vec))
		}
		if sp.reserve > 0 {
			// At most the chunks not yet read; a second model's set, rare,
			// grows as it fills.
			vs.Reserve(sp.reserve)
			sp.reserve = 0
		}
		sp.sets[c.model] = vs
	} else if vs.Dims() != len(c.vec) {
		return false // not the model's dimensions: PostgreSQL would not rank it either
	}
	vs.Put(rid, c.id, slot, c.vec)
	mc.model = c.model
	return true
}

// dropChunk removes a chunk. The caller holds sp.mu.
func (sp *memSpace) dropChunk(id uuid.UUID) {
	c, ok := sp.chunks[id]
	if !ok {
		return
	}
	delete(sp.chunks, id)
	sp.kw.Remove(c.rid)
	if vs := sp.sets[c.model]; c.model != 0 && vs != nil {
		vs.Remove(c.rid)
	}
}

// pollSearchChangesSQL reads the snapshot and, in it, the changes of the
// transactions the previous snapshot had not seen end: two index ranges on
// (workspace_id, xid) (an OR of the two conditions scanned every row of
// the workspace). The branches are disjoint: in-progress xids are below
// xmax.
const pollSearchChangesSQL = `SELECT pg_current_snapshot()::text, NULL::smallint, NULL::uuid, NULL::uuid
UNION ALL
SELECT NULL, kind, entity_id, chunk_id FROM search_changes WHERE workspace_id = $1 AND xid >= $2::text::xid8
UNION ALL
SELECT NULL, kind, entity_id, chunk_id FROM search_changes WHERE workspace_id = $1 AND xid = ANY($3::text[]::xid8[])`

// catchUp applies the changes the copy's snapshot did not see.
func (m *memIndex) catchUp(ctx context.Context, sp *memSpace) error {
	ctx = withWS(ctx, sp.ws)
	sp.mu.RLock()
	if sp.state != memReady {
		sp.mu.RUnlock()
		return nil
	}
	prev := sp.snap
	sp.mu.RUnlock()
	xmax, xip := prev.pending()
	rows, err := m.s.pool.Query(ctx, pollSearchChangesSQL, sp.ws, xmax, xip)
	if err != nil {
		return fmt.Errorf("read search changes: %w", mapErr(err))
	}
	var snapText *string
	ents := map[uuid.UUID]bool{}
	rowsChanged := map[uuid.UUID]bool{} // kind 3: only the entity cache follows
	chunks := map[uuid.UUID]bool{}
	edgeEnts := map[uuid.UUID]bool{} // kind 4: their edges are read again
	reset := false
	n := 0
	for rows.Next() {
		var text *string
		var kind *int16
		var ent, chunk *uuid.UUID
		if err := rows.Scan(&text, &kind, &ent, &chunk); err != nil {
			rows.Close()
			return fmt.Errorf("read search changes: %w", err)
		}
		if text != nil {
			snapText = text
			continue
		}
		n++
		switch {
		case *kind == 0:
			reset = true
		case *kind == 1 && ent != nil:
			ents[*ent] = true
		case *kind == 3 && ent != nil:
			rowsChanged[*ent] = true
		case *kind == 4 && ent != nil:
			edgeEnts[*ent] = true
		case *kind == 2 && chunk != nil:
			chunks[*chunk] = true
			if ent != nil {
				ents[*ent] = true
			}
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read search changes: %w", mapErr(err))
	}
	if snapText == nil {
		return errors.New("read search changes: no snapshot returned")
	}
	snap, err := parseSnapshot(*snapText)
	if err != nil {
		return fmt.Errorf("read search changes: %w", err)
	}
	if reset || n > memReloadBacklog {
		m.s.log.Info("postgres: in-memory index far behind; loading it again", "workspace", sp.ws, "changes", n, "reset", reset)
		m.reload(sp)
		return nil
	}
	if len(ents) == 0 && len(chunks) == 0 && len(edgeEnts) == 0 {
		sp.mu.Lock()
		if sp.state == memReady && sp.snap.same(prev) {
			// Before the new snapshot: a read that finds the index
			// fresh must not find these entities' old rows.
			m.ents.Invalidate(sp.ws, rowsChanged)
			sp.snap, sp.caughtUp = snap, time.Now()
		}
		sp.mu.Unlock()
		return nil
	}
	// The rows now: an entity or chunk read after the snapshot is at
	// least as new as the change that named it (a later change is read
	// again at the next catch-up, and applying it twice is harmless).
	var entRows []kwindex.Entity
	var chunkRows []memChunkRow
	// Two statements, not a batch: a batch cannot ask for binary results
	// (pgx.QueryResultFormats), and the tsvectors come in binary.
	rs, err := m.s.pool.Query(ctx, "SELECT "+memEntityCols+" FROM entities WHERE workspace_id = $1 AND id = ANY($2)", memBinary, sp.ws, mapKeys(ents))
	if err == nil {
		err = scanMemEntities(rs, func(e kwindex.Entity) { entRows = append(entRows, e) })
	}
	if err == nil && len(chunks) > 0 {
		// In id order, as a load reads them.
		rs, err = m.s.pool.Query(ctx, "SELECT "+memChunkCols+" FROM chunks WHERE workspace_id = $1 AND id = ANY($2) ORDER BY id", memBinary[:6], sp.ws, mapKeys(chunks))
		if err == nil {
			err = scanMemChunks(rs, nil, func(c memChunkRow) { chunkRows = append(chunkRows, c) })
		}
	}
	var edgeRows []memEdgeRow
	if err == nil && len(edgeEnts) > 0 {
		ids := mapKeys(edgeEnts)
		rs, err = m.s.pool.Query(ctx, memEdgeSQL+" AND (source_id = ANY($2) OR target_id = ANY($2))", sp.ws, ids)
		if err == nil {
			err = scanMemEdges(rs, func(e memEdgeRow) { edgeRows = append(edgeRows, e) })
		}
	}
	if err != nil {
		return fmt.Errorf("read changed rows: %w", mapErr(err))
	}

	sp.mu.Lock()
	defer sp.mu.Unlock()
	if sp.state != memReady || !sp.snap.same(prev) {
		return nil // a load overtook this catch-up; it is at least as new
	}
	m.ents.Invalidate(sp.ws, ents)
	m.ents.Invalidate(sp.ws, rowsChanged)
	// Chunks first out, then entities, then chunks in: a deleted entity's
	// slot is reused only after its chunks left.
	for id := range chunks {
		sp.dropChunk(id)
	}
	seen := make(map[uuid.UUID]bool, len(entRows))
	for _, e := range entRows {
		sp.putEntity(e)
		seen[e.ID] = true
	}
	var freed []int32
	for id := range ents {
		if !seen[id] {
			// Its chunks went with it: their deletes were logged too
			// (the cascade fires the chunks' triggers) and left above.
			sp.dropEntity(id, &freed)
		}
	}
	sp.free = append(sp.free, freed...)
	for _, c := range chunkRows {
		sp.putChunk(c)
	}
	if sp.kw.NeedsRebuild() {
		sp.kw = sp.kw.Rebuilt() // the same rids, so sp.chunks stays valid
	}
	// Both ends of a changed edge were named, so each named entity's
	// edges are exactly the rows read for it.
	for id := range edgeEnts {
		delete(sp.edges, id)
	}
	for _, e := range edgeRows {
		sp.addEdge(e.source, e.target, e.rel, edgeEnts)
	}
	sp.snap, sp.caughtUp = snap, time.Now()
	return nil
}

// memEdgeSQL reads a workspace's edges ($1) as the index holds them.
const memEdgeSQL = "SELECT source_id, target_id, relation FROM edges WHERE workspace_id = $1"

// memEdgeSummaries answers EdgeSummaries from the copy for a search's
// reads (under Refresh) once it is caught up, or reports false.
func (s *Store) memEdgeSummaries(ctx context.Context, ws string, ids []uuid.UUID, f driver.EntityFilter) (map[uuid.UUID]driver.EdgeSummary, bool) {
	if s.mem == nil {
		return nil, false
	}
	if mark, _ := ctx.Value(memMarkKey{}).(*memMark); mark == nil {
		return nil, false
	}
	sp := s.mem.ready(ctx, ws)
	if sp == nil {
		return nil, false
	}
	sp.mu.RLock()
	defer sp.mu.RUnlock()
	if sp.state != memReady {
		return nil, false
	}
	return sp.edgeSummaries(ids, sp.admitted(&f)), true
}

func mapKeys(m map[uuid.UUID]bool) []uuid.UUID {
	out := make([]uuid.UUID, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// view returns slot i's filter attributes, or nil for a free slot.
func (sp *memSpace) view(i int) *driver.FilterView {
	if e := &sp.ents[i]; e.live {
		return &e.FilterView
	}
	return nil
}

// admitted returns which entity slots f admits (kwindex.Masks: the last
// few filters' masks are kept, and follow entity changes slot by slot).
// The caller holds sp.mu for reading.
func (sp *memSpace) admitted(f *driver.EntityFilter) []bool {
	return sp.masks.Admitted(f, len(sp.ents), sp.view)
}

// memVectorSearch answers a vector search from the copy, or reports false
// when the copy is not ready.
func (s *Store) memVectorSearch(ctx context.Context, ws string, q driver.VectorQuery) (driver.VectorResult, bool, error) {
	sp := s.mem.ready(ctx, ws)
	if sp == nil {
		return driver.VectorResult{}, false, nil
	}
	res := driver.VectorResult{Plan: "memory", Hits: []driver.VectorHit{}}
	sp.mu.RLock()
	vs := sp.sets[q.ModelID]
	var top []vecscan.Scored
	if vs != nil && vs.Len() > 0 {
		if len(q.Vector) != vs.Dims() {
			sp.mu.RUnlock()
			return res, true, fmt.Errorf("postgres: vector search: query has %d dimensions, the model's vectors %d: %w",
				len(q.Vector), vs.Dims(), driver.ErrInvalidArgument)
		}
		candidates := s.cfg.MemoryIndexCandidates
		if q.Strategy == driver.StrategyExact {
			candidates = 0 // TopKApprox is TopK then
		}
		var all bool
		// All the cores for a scan that runs alone (it answers sooner);
		// one when other scans run too: the cores are busy anyway, and
		// splitting each scan only adds goroutines and cache traffic.
		workers := s.mem.workers
		if s.mem.scans.Add(1) > 1 {
			workers = 1
		}
		admitted, key, keyed := sp.masks.AdmittedKey(&q.Filter, len(sp.ents), sp.view)
		switch {
		case keyed && (candidates <= 0 || vs.Len() <= candidates):
			// Exact: a query asked again ranks only the vectors that
			// changed since (agents repeat their queries).
			top, all = vs.TopKCached(q.Vector, admitted, q.Limit, workers, key, sp.attrGen), true
		default:
			top, all = vs.TopKApprox(q.Vector, admitted, q.Limit, candidates, workers)
		}
		s.mem.scans.Add(-1)
		if !all {
			res.Plan = "memory_approx"
		}
	}
	if len(q.Also) > 0 {
		res.Similarities = sp.similarities(q.ModelID, q.Vector, q.Also)
	}
	type distHit struct {
		dist float64
		hit  driver.VectorHit
	}
	// The hits' text and entities, from the keyword set.
	hits := make([]distHit, 0, len(top))
	for _, t := range top {
		ent, content, ok := sp.kw.Lookup(sp.chunks[t.Chunk].rid)
		if !ok {
			continue
		}
		e := &sp.ents[ent]
		dist := 1 - t.Sim
		hits = append(hits, distHit{dist, driver.VectorHit{ChunkID: t.Chunk, EntityID: e.ID, Content: content,
			Similarity: 1 - dist, UpdatedAt: time.UnixMicro(e.UpdatedAt).UTC()}})
	}
	sp.mu.RUnlock()
	// The exact query's ORDER BY distance, id (NaN distances last).
	slices.SortStableFunc(hits, func(a, b distHit) int {
		return vecscan.CompareDistance(a.dist, a.hit.ChunkID, b.dist, b.hit.ChunkID)
	})
	res.Hits = make([]driver.VectorHit, len(hits))
	for i, h := range hits {
		res.Hits[i] = h.hit
	}
	return res, true, nil
}

// similarities returns the similarity to x of each chunk among ids that
// has a vector of model. The caller holds sp.mu for reading.
func (sp *memSpace) similarities(model int64, x []float32, ids []uuid.UUID) map[uuid.UUID]float64 {
	out := make(map[uuid.UUID]float64, len(ids))
	vs := sp.sets[model]
	if vs == nil || len(x) != vs.Dims() {
		return out
	}
	xss := vecscan.SquaredNorm(x)
	for _, id := range ids {
		if sim, ok := vs.SimilarityOf(x, xss, id); ok {
			out[id] = 1 - (1 - sim)
		}
	}
	return out
}

// memChunkSimilarities answers ChunkSimilarities from the copy, or reports
// false when it is not ready.
func (s *Store) memChunkSimilarities(ctx context.Context, ws string, modelID int64, vec []float32, ids []uuid.UUID) (map[uuid.UUID]float64, bool) {
	sp := s.mem.ready(ctx, ws)
	if sp == nil {
		return nil, false
	}
	sp.mu.RLock()
	defer sp.mu.RUnlock()
	return sp.similarities(modelID, vec, ids), true
}

// pruneSearchChanges deletes the search_changes rows of transactions that
// had ended when the oldest snapshot in horizons was taken, once it is
// searchChangesKeep old, and returns how many. horizons holds the xmin of
// a snapshot per prune run (the store's background loop keeps it).
func (s *Store) pruneSearchChanges(ctx context.Context, h *changeHorizons) (int64, error) {
	var snapText string
	if err := s.owner.QueryRow(storeWide(ctx), "SELECT pg_current_snapshot()::text").Scan(&snapText); err != nil {
		return 0, fmt.Errorf("postgres: prune search changes: %w", mapErr(err))
	}
	snap, err := parseSnapshot(snapText)
	if err != nil {
		return 0, fmt.Errorf("postgres: prune search changes: %w", err)
	}
	below, ok := h.add(time.Now(), snap.xmin)
	if !ok {
		return 0, nil
	}
	tag, err := s.owner.Exec(storeWide(ctx), "DELETE FROM search_changes WHERE xid < $1::text::xid8", strconv.FormatUint(below, 10))
	if err != nil {
		return 0, fmt.Errorf("postgres: prune search changes: %w", mapErr(err))
	}
	return tag.RowsAffected(), nil
}

// changeHorizons remembers, per prune run, when it ran and the xmin of its
// snapshot: every transaction below that xmin had ended then.
type changeHorizons struct {
	at   []time.Time
	xmin []uint64
}

// add records a run and returns the xmin of the newest run at least
// searchChangesKeep old, if any (forgetting older runs).
func (h *changeHorizons) add(now time.Time, xmin uint64) (uint64, bool) {
	h.at = append(h.at, now)
	h.xmin = append(h.xmin, xmin)
	i := -1
	for j, t := range h.at {
		if now.Sub(t) >= searchChangesKeep {
			i = j
		}
	}
	if i < 0 {
		return 0, false
	}
	below := h.xmin[i]
	h.at, h.xmin = h.at[i:], h.xmin[i:]
	return below, true
}

// WarmMemoryIndex loads workspace ws's in-memory index
// (Config.MemoryIndex) unless it is loaded, and waits for it: a
// server can call it at start so that its first searches do not go to
// PostgreSQL while the copy loads. It fails when the store keeps no copies
// or the load fails.
func (s *Store) WarmMemoryIndex(ctx context.Context, ws string) error {
	if s.mem == nil {
		return errors.New("postgres: warm the in-memory index: Config.MemoryIndex is off")
	}
	s.mem.ready(ctx, ws)
	s.mem.mu.Lock()
	sp := s.mem.spaces[ws]
	s.mem.mu.Unlock()
	for {
		sp.mu.RLock()
		state, loadErr := sp.state, sp.loadErr
		sp.mu.RUnlock()
		switch state {
		case memReady:
			return nil
		case memFailed:
			if loadErr == nil {
				loadErr = errors.New("a catch-up failed (see the log)")
			}
			return fmt.Errorf("postgres: warm the in-memory index of workspace %q: %w", ws, loadErr)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// MemoryIndexStatus describes a workspace's in-process copy
// (Config.MemoryIndex).
type MemoryIndexStatus struct {
	State    string // "loading", "ready" or "failed"
	Entities int    // entities held
	Chunks   int    // chunks held for keywords
	Vectors  int    // chunk vectors held, every model's
	// VectorBytes is the memory of the vector arrays (vectors, codes,
	// ids; the maps aside).
	VectorBytes int64
	// Exact vector searches since the load that brought a remembered
	// result of the same query up to date, and that scanned every vector.
	RepeatsReused, Scans int64
	CaughtUp             time.Time // when the copy last reflected every commit
	Err                  error     // why the last load failed, when State is "failed"
}

// MemoryIndexStatus returns workspace ws's copy's status, or false when the
// store keeps no copies or ws has none (no search of it yet).
func (s *Store) MemoryIndexStatus(ws string) (MemoryIndexStatus, bool) {
	if s.mem == nil {
		return MemoryIndexStatus{}, false
	}
	s.mem.mu.Lock()
	sp := s.mem.spaces[ws]
	s.mem.mu.Unlock()
	if sp == nil {
		return MemoryIndexStatus{}, false
	}
	sp.mu.RLock()
	defer sp.mu.RUnlock()
	st := MemoryIndexStatus{State: [...]string{"loading", "ready", "failed"}[sp.state], Entities: len(sp.entSlot),
		CaughtUp: sp.caughtUp}
	if sp.state == memFailed {
		st.Err = sp.loadErr
	}
	if sp.kw != nil {
		st.Chunks = sp.kw.Live()
	}
	for _, vs := range sp.sets {
		st.Vectors += vs.Len()
		st.VectorBytes += vs.Bytes()
		reused, scanned := vs.CacheCounts()
		st.RepeatsReused += reused
		st.Scans += scanned
	}
	return st, true
}

// decodeVectorBinary decodes pgvector's binary form of a vector — its
// dimension count (int16), two unused bytes, then each element as a
// big-endian float32 — appending the elements to dst.
func decodeVectorBinary(raw []byte, dst []float32) ([]float32, error) {
	if len(raw) < 4 {
		return nil, fmt.Errorf("vector: %d bytes, want at least 4", len(raw))
	}
	dims := int(binary.BigEndian.Uint16(raw))
	if len(raw) != 4+4*dims {
		return nil, fmt.Errorf("vector: %d bytes for %d dimensions, want %d", len(raw), dims, 4+4*dims)
	}
	dst = slices.Grow(dst, dims)
	for i := range dims {
		dst = append(dst, math.Float32frombits(binary.BigEndian.Uint32(raw[4+4*i:])))
	}
	return dst, nil
}

// loadBatch is how many chunk rows a load hands over at a time.
const loadBatch = 256

// chunkBatch is rows read by a load, their vectors in arena.
type chunkBatch struct {
	rows  []memChunkRow
	arena []float32
}

// loadChunks stores the chunk rows into sp (not yet published) in two
// goroutines: this one reads and decodes the rows, another stores them
// (the keyword index's postings, the vectors' codes), so a load uses two
// cores; three batches circulate between them. It returns how many
// vectors it stored.
func loadChunks(rows pgx.Rows, sp *memSpace) (int, error) {
	free, full := make(chan *chunkBatch, 3), make(chan *chunkBatch, 3)
	for range 3 {
		free <- &chunkBatch{}
	}
	stored := make(chan int, 1)
	go func() {
		n := 0
		for b := range full {
			for _, c := range b.rows {
				if sp.putChunk(c) {
					n++
				}
			}
			clear(b.rows) // drop the strings and tsvectors the index now holds
			b.rows, b.arena = b.rows[:0], b.arena[:0]
			free <- b
		}
		stored <- n
	}()
	cur := <-free
	flush := func() {
		full <- cur
		cur = <-free
	}
	err := scanMemChunks(rows, func(dims int) []float32 {
		if cap(cur.arena)-len(cur.arena) < dims {
			if len(cur.rows) > 0 {
				flush()
			}
			if cap(cur.arena) < loadBatch*dims {
				cur.arena = make([]float32, 0, loadBatch*dims)
			}
		}
		at := len(cur.arena)
		cur.arena = cur.arena[:at+dims]
		return cur.arena[at : at : at+dims]
	}, func(c memChunkRow) {
		cur.rows = append(cur.rows, c)
		if len(cur.rows) == loadBatch {
			flush()
		}
	})
	if len(cur.rows) > 0 {
		full <- cur
	}
	close(full)
	return <-stored, err
}
