package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/internal/kwindex"
	"github.com/postgram-go/postgram/internal/vecscan"
)

// Loading the index reads every embedding of the file: 200 MB for 50,000
// vectors of 1,024 dimensions. The read is split into ranges of chunk rid,
// read in parallel by several read connections (each range's vectors land
// in slots reserved for it, counted beforehand), while the first connection
// also reads the entities. The connections read one snapshot: each opens
// its transaction and reads max(change_log.seq), and every change the index
// follows appends to change_log (AUTOINCREMENT, so the maximum only grows),
// so equal maxima mean equal indexed data. A connection that sees another
// snapshot, or that the pool cannot give at once, is not used.

// loadRangeRows is the number of chunk rids per range read by one query;
// loadMaxRanges bounds the ranges.
const (
	loadRangeRows = 4096
	loadMaxRanges = 16
)

type setKey struct {
	ws    string
	model int64
}

// loadSet is a vector set being filled.
type loadSet struct {
	vs     *vecscan.Set
	ws     string
	model  int64
	base   []int   // first slot of each range
	count  []int   // slots reserved for each range
	erid   []int64 // entity rid per slot, resolved once entities are loaded
	filled []bool  // slots a valid row filled
	idx    int     // position in loader.list
}

type loader struct {
	nx     *index
	sets   map[setKey]*loadSet
	list   []*loadSet
	bounds []int64 // range r is chunk rids [bounds[r], bounds[r+1])
}

// rangeLoader receives the postgram_load_vector calls of one range.
type rangeLoader struct {
	l    *loader
	r    int
	fill []int // slots filled per set (by loadSet.idx)
	done []int // slots quantized per set (they are quantized four at a time)
	last *loadSet
	lws  string
	lmod int64
}

// load (re)builds the whole index from one consistent snapshot.
func (ix *index) load(ctx context.Context) error {
	start := time.Now()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	tx, err := ix.s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("sqlite: load vector index: %w", mapErr(err))
	}
	defer tx.Rollback()
	var applied, nents int64
	if err := tx.QueryRowContext(ctx, "SELECT coalesce(max(seq), 0), (SELECT count(*) FROM entities) FROM change_log").Scan(&applied, &nents); err != nil {
		if strings.Contains(err.Error(), "no such table") {
			return errNotMigrated
		}
		return fmt.Errorf("sqlite: load vector index: %w", mapErr(err))
	}
	var lo, hi sql.NullInt64
	if err := tx.QueryRowContext(ctx, "SELECT min(chunk_rid), max(chunk_rid) FROM chunk_embeddings").Scan(&lo, &hi); err != nil {
		return fmt.Errorf("sqlite: load vector index: %w", mapErr(err))
	}
	nx := &index{spaces: map[string]*space{}, entLoc: make(map[int64]entLoc, nents), chunkLoc: map[int64]chunkLoc{}}
	var docs *docLoad // the keyword index, linked to entities once they are in
	l := &loader{nx: nx, sets: map[setKey]*loadSet{}}
	if lo.Valid {
		span := uint64(hi.Int64 - lo.Int64 + 1)
		k := int(min(loadMaxRanges, max(1, span/loadRangeRows)))
		step, rem := span/uint64(k), span%uint64(k)
		l.bounds = make([]int64, k+1)
		for r := range k + 1 {
			l.bounds[r] = lo.Int64 + int64(step*uint64(r)+min(uint64(r), rem))
		}
		if err := l.reserve(ctx, tx); err != nil {
			return fmt.Errorf("sqlite: load vector index: %w", err)
		}
	}

	// Extra connections, each in its own transaction on the same snapshot.
	txs := []*sql.Tx{tx}
	if ranges := len(l.bounds) - 1; ranges > 1 {
		want := min(runtime.GOMAXPROCS(0), ix.s.cfg.ReadConns, ranges) - 1
		for range want {
			conn, etx, ok := ix.extraTx(ctx, applied)
			if !ok {
				break
			}
			defer conn.Close() // after the transaction ends
			defer etx.Rollback()
			txs = append(txs, etx)
		}
	}

	var (
		next     atomic.Int64
		wg       sync.WaitGroup
		errMu    sync.Mutex
		firstErr error
		entsTook time.Duration
	)
	fail := func(err error) {
		errMu.Lock()
		if firstErr == nil {
			firstErr = err
			cancel()
		}
		errMu.Unlock()
	}
	// The chunks' text is read beside the entities when there is a
	// second connection, after them otherwise.
	docsBy := min(1, len(txs)-1)
	for w, wtx := range txs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if w == 0 {
				if err := loadEntities(ctx, wtx, nx); err != nil {
					fail(err)
					return
				}
				entsTook = time.Since(start)
			}
			if w == docsBy {
				var err error
				if docs, err = loadDocs(ctx, wtx); err != nil {
					fail(err)
					return
				}
			}
			for {
				r := int(next.Add(1) - 1)
				if r >= len(l.bounds)-1 {
					return
				}
				if err := l.loadRange(ctx, wtx, r); err != nil {
					fail(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	if firstErr != nil {
		return fmt.Errorf("sqlite: load vector index: %w", mapErr(firstErr))
	}
	for _, t := range txs {
		t.Rollback()
	}
	l.finish()
	docs.link(nx)

	ix.s.log.Debug("vector index loaded", "entities", len(nx.entLoc), "vectors", len(nx.chunkLoc), "connections", len(txs),
		"entities_took", entsTook.String(), "took", time.Since(start).String())
	ix.mu.Lock()
	ix.s.ents.Clear() // changes since the cache was filled may never be applied
	ix.spaces, ix.entLoc, ix.chunkLoc = nx.spaces, nx.entLoc, nx.chunkLoc
	ix.applied = applied
	ix.loaded = true
	ix.mu.Unlock()
	ix.keysGen.Add(1) // key changes in entries never applied may be lost
	return nil
}

// extraTx opens a read transaction on another connection of the pool, if
// one is free at once, and keeps it when it reads the snapshot whose last
// change_log entry is applied. The caller closes conn after the
// transaction.
func (ix *index) extraTx(ctx context.Context, applied int64) (*sql.Conn, *sql.Tx, bool) {
	// Waiting for a connection could deadlock: a reload runs while
	// searches may hold connections and wait for it.
	cctx, ccancel := context.WithTimeout(ctx, 20*time.Millisecond)
	conn, err := ix.s.r.Conn(cctx)
	ccancel()
	if err != nil {
		return nil, nil, false
	}
	tx, err := conn.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		conn.Close()
		return nil, nil, false
	}
	var seq int64
	if err := tx.QueryRowContext(ctx, "SELECT coalesce(max(seq), 0) FROM change_log").Scan(&seq); err != nil || seq != applied {
		tx.Rollback()
		conn.Close()
		return nil, nil, false
	}
	return conn, tx, true
}

// reserve sizes every set and reserves each range's slots in it, so that
// the ranges fill preallocated arrays in parallel.
func (l *loader) reserve(ctx context.Context, tx *sql.Tx) error {
	k := len(l.bounds) - 1
	var q strings.Builder
	q.WriteString("SELECT v.workspace_id, v.model_id, m.dimensions, count(*)")
	args := make([]any, 0, k-1)
	for r := 1; r < k; r++ {
		q.WriteString(", count(*) FILTER (WHERE v.chunk_rid < ?)")
		args = append(args, l.bounds[r])
	}
	q.WriteString(` FROM chunk_embeddings v JOIN embedding_models m ON m.id = v.model_id
		GROUP BY v.workspace_id, v.model_id`)
	rows, err := tx.QueryContext(ctx, q.String(), args...)
	if err != nil {
		return mapErr(err)
	}
	defer rows.Close()
	below := make([]int64, k+1) // below[r]: rows with chunk_rid < bounds[r]
	dest := make([]any, 3+k)
	var key setKey
	var dims int
	dest[0], dest[1], dest[2] = &key.ws, &key.model, &dims
	dest[3] = &below[k]
	for r := 1; r < k; r++ {
		dest[3+r] = &below[r]
	}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		n := int(below[k])
		vs := vecscan.New(dims)
		vs.Alloc(n)
		ls := &loadSet{vs: vs, ws: key.ws, model: key.model, base: make([]int, k), count: make([]int, k),
			erid: make([]int64, n), filled: make([]bool, n), idx: len(l.list)}
		for r := range k {
			ls.base[r] = int(below[r])
			ls.count[r] = int(below[r+1] - below[r])
		}
		l.nx.space(key.ws).sets[key.model] = vs
		l.sets[key] = ls
		l.list = append(l.list, ls)
	}
	return mapErr(rows.Err())
}

// loadRange reads the embeddings of range r.
func (l *loader) loadRange(ctx context.Context, tx *sql.Tx, r int) error {
	rl := &rangeLoader{l: l, r: r, fill: make([]int, len(l.list)), done: make([]int, len(l.list))}
	tok := loaderSeq.Add(1)
	loaders.Store(tok, rl)
	defer loaders.Delete(tok)
	var n int
	err := tx.QueryRowContext(ctx, `SELECT count(postgram_load_vector(?, chunk_rid, model_id, workspace_id, chunk_id, entity_rid, embedding))
		FROM chunk_embeddings WHERE chunk_rid >= ? AND chunk_rid < ?`, tok, l.bounds[r], l.bounds[r+1]).Scan(&n)
	for _, ls := range l.list {
		if b := ls.base[r]; rl.done[ls.idx] < rl.fill[ls.idx] {
			ls.vs.QuantizeSlots(b+rl.done[ls.idx], b+rl.fill[ls.idx])
		}
	}
	return err
}

// add stores and quantizes one embedding. ws, cid and blob are only valid
// during the call.
func (rl *rangeLoader) add(crid, model int64, ws, cid string, erid int64, blob []byte) {
	ls := rl.last
	if ls == nil || model != rl.lmod || ws != rl.lws {
		ls = rl.l.sets[setKey{ws, model}]
		if ls == nil {
			return
		}
		rl.last, rl.lws, rl.lmod = ls, ls.ws, model
	}
	vs := ls.vs
	f := rl.fill[ls.idx]
	if f >= ls.count[rl.r] || len(blob) != 4*vs.Dims() {
		return // a vector of the wrong size is never returned
	}
	chunk, err := uuid.Parse(cid)
	if err != nil {
		return
	}
	rl.fill[ls.idx] = f + 1
	s := ls.base[rl.r] + f
	vs.Fill(s, crid, chunk, blob)
	ls.erid[s], ls.filled[s] = erid, true
	if d := rl.done[ls.idx]; f+1-d == 4 {
		vs.QuantizeSlots(ls.base[rl.r]+d, s+1)
		rl.done[ls.idx] = f + 1
	}
}

// finish links the vectors to their entities, drops the slots left empty
// (rows skipped, vectors of unknown entities) and indexes the slots by rid.
func (l *loader) finish() {
	total := 0
	for _, ls := range l.list {
		total += ls.vs.Len()
	}
	l.nx.chunkLoc = make(map[int64]chunkLoc, total)
	for _, ls := range l.list {
		rids := ls.vs.Compact(func(s int) (int32, bool) {
			if !ls.filled[s] {
				return 0, false
			}
			el, ok := l.nx.entLoc[ls.erid[s]]
			return el.slot, ok
		})
		for _, rid := range rids {
			l.nx.chunkLoc[rid] = chunkLoc{ls.ws, ls.model}
		}
	}
}

// docLoad is the keyword index as loadDocs builds it: per workspace, a set
// whose chunks still lack their entity slots (entity rids instead).
type docLoad struct {
	sets  map[string]*kwindex.Set
	erids map[string][]int64 // per set, the entity rid of each slot
}

// loadDocs reads every chunk, in rid order, into keyword sets. It runs
// beside the entities' load; link then resolves the entity slots.
func loadDocs(ctx context.Context, tx *sql.Tx) (*docLoad, error) {
	rows, err := tx.QueryContext(ctx, "SELECT rid, workspace_id, id, entity_rid, content, tsv FROM chunks ORDER BY rid")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	dl := &docLoad{sets: map[string]*kwindex.Set{}, erids: map[string][]int64{}}
	var (
		ws string
		ks *kwindex.Set
	)
	for rows.Next() {
		r, err := scanDocRow(rows)
		if err != nil {
			return nil, err
		}
		if ks == nil || r.ws != ws {
			ws = r.ws
			if ks = dl.sets[ws]; ks == nil {
				ks = kwindex.New()
				dl.sets[ws] = ks
			}
		}
		ks.Add(r.d)
		dl.erids[ws] = append(dl.erids[ws], r.erid)
	}
	return dl, rows.Err()
}

// link gives every chunk its entity's slot in nx and attaches the sets;
// a chunk whose entity is unknown is dropped.
func (dl *docLoad) link(nx *index) {
	for ws, ks := range dl.sets {
		sp := nx.space(ws)
		erids := dl.erids[ws]
		ks.Link(func(s int32) (int32, bool) {
			el, ok := nx.entLoc[erids[s]]
			return el.slot, ok && el.sp == sp
		})
		if ks.NeedsRebuild() {
			ks = ks.Rebuilt()
		}
		sp.kw = ks
	}
}

func loadEntities(ctx context.Context, tx *sql.Tx, nx *index) error {
	el := &entLoader{nx: nx}
	tok := loaderSeq.Add(1)
	loaders.Store(tok, el)
	defer loaders.Delete(tok)
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(postgram_load_entity(?, `+entityAttrCols+`)) FROM entities INDEXED BY entities_filter`, tok).Scan(&n); err != nil {
		return err
	}
	if el.err != nil {
		return el.err
	}
	return loadHeads(ctx, tx, nx)
}

// loadHeads attaches every entity's head tsvector to its attributes.
func loadHeads(ctx context.Context, tx *sql.Tx, nx *index) error {
	rows, err := tx.QueryContext(ctx, "SELECT rid, tsv FROM entity_heads")
	if err != nil {
		return err
	}
	defer rows.Close()
	for rows.Next() {
		var rid int64
		var tsv []byte
		if err := rows.Scan(&rid, &tsv); err != nil {
			return err
		}
		if loc, ok := nx.entLoc[rid]; ok {
			loc.sp.ents[loc.slot].Head, loc.sp.ents[loc.slot].HeadLen = tsv, kwindex.Length(tsv)
			loc.sp.indexHead(loc.slot, nil, tsv)
		}
	}
	return rows.Err()
}

// entLoader receives postgram_load_entity calls while the index loads.
type entLoader struct {
	nx  *index
	err error
	ws  string // the last workspace seen (cloned)
}

// interned returns the constant for a known enum value, so loading 50,000
// entities does not allocate 150,000 copies of "memory" and "active".
func interned[T ~string](v string, known []T) T {
	for _, k := range known {
		if string(k) == v {
			return k
		}
	}
	return T(strings.Clone(v))
}

// add stores one entity's attributes; the strings are only valid during
// the call.
func (l *entLoader) add(rid int64, ws, id, typ, status, vis, owner, tags string, role *string, client string, updated int64) {
	if l.err != nil {
		return
	}
	a := entAttr{live: true, rid: rid}
	a.UpdatedAt = updated
	var err error
	if a.ID, err = uuid.Parse(id); err != nil {
		l.err = fmt.Errorf("entity %q: %w", id, err)
		return
	}
	a.Type = interned(typ, driver.EntityTypes)
	a.Status = interned(status, driver.Statuses)
	a.Visibility = interned(vis, driver.Visibilities)
	if owner != "" {
		a.Owner = strings.Clone(owner)
	}
	if client != "" {
		a.ClientID = strings.Clone(client)
	}
	if role != nil {
		a.MemoryRole = string(interned(*role, []driver.MemoryRole{driver.RoleDurableMemory, driver.RoleSessionContext}))
	}
	if tags != "[]" {
		if err := json.Unmarshal([]byte(tags), &a.Tags); err != nil {
			l.err = fmt.Errorf("tags of entity %s: %w", id, err)
			return
		}
	}
	if ws != l.ws {
		l.ws = strings.Clone(ws)
	}
	l.nx.putEntity(l.ws, a)
}
