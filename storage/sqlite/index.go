package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/google/uuid"

	"github.com/postgram-go/postgram/driver"
	"github.com/postgram-go/postgram/internal/kwindex"
	"github.com/postgram-go/postgram/internal/vecscan"
)

// index is the in-process vector index: every embedding of the file, per
// workspace and model, with the filter attributes of every entity. It is a
// cache of the database, kept current by applying change_log.
type index struct {
	s *Store

	mu       sync.RWMutex // guards everything below
	loaded   bool
	applied  int64 // the last change_log entry reflected
	spaces   map[string]*space
	entLoc   map[int64]entLoc   // entity rid → its slot
	chunkLoc map[int64]chunkLoc // chunk rid → the set holding its vector

	syncMu      sync.Mutex // serialises catching up
	dataVersion int64
	haveVersion bool
	versionStmt *sql.Stmt // PRAGMA data_version on the watch connection, prepared once

	// Freshness checks are shared: a caller needs a check that started
	// after it arrived, and every caller waiting when one starts can use
	// it (see ensureFresh).
	freshMu      sync.Mutex
	freshCond    *sync.Cond
	freshRunning bool
	freshStarted uint64 // the last check started
	freshDone    uint64 // the last check that succeeded

	keysGen atomic.Uint64 // bumped by every API-key change applied
}

type entLoc struct {
	sp   *space
	slot int32
}

type chunkLoc struct {
	ws    string
	model int64
}

// space is one workspace.
type space struct {
	ents []entAttr
	free []int32
	sets map[int64]*vecscan.Set // by model id
	kw   *kwindex.Set           // the keyword index (nil until a chunk arrives)
	// heads maps a lexeme to the slots of the entities whose head holds it.
	heads kwindex.Heads

	masks kwindex.Masks // recent filters' admitted entities
	// attrGen counts changes of entities already held (attributes a
	// filter reads, a drop): the vector sets' remembered results
	// (vecscan.Set.TopKCached) are not reused across one. A new entity's
	// vectors are changes of the sets themselves.
	attrGen uint64
}

// view returns slot i's filter attributes, or nil for a free slot.
func (sp *space) view(i int) *driver.FilterView {
	if a := &sp.ents[i]; a.live {
		return &a.FilterView
	}
	return nil
}

// admitted returns which entities of the space f admits, by slot. The
// caller holds the index's read lock at least.
func (sp *space) admitted(f *driver.EntityFilter) []bool {
	return sp.masks.Admitted(f, len(sp.ents), sp.view)
}

// entAttr is what EntityFilter and the keyword index look at: the id, the
// attributes filters read (type, status, visibility, owner, tags,
// metadata.memory_role, client id and update time in µs) and the head's
// encoded tsvector (entity_heads).
type entAttr struct {
	live bool
	rid  int64
	kwindex.Entity
}

func newIndex(s *Store) *index {
	ix := &index{s: s}
	ix.freshCond = sync.NewCond(&ix.freshMu)
	return ix
}

func (ix *index) isLoaded() bool {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	return ix.loaded
}

func (ix *index) release() {
	ix.syncMu.Lock()
	if ix.versionStmt != nil {
		ix.versionStmt.Close()
		ix.versionStmt = nil
	}
	ix.syncMu.Unlock()
	ix.mu.Lock()
	ix.spaces, ix.entLoc, ix.chunkLoc = nil, nil, nil
	ix.loaded = false
	ix.mu.Unlock()
}

// count returns the number of vectors held.
func (ix *index) count() int {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	n := 0
	for _, sp := range ix.spaces {
		for _, vs := range sp.sets {
			n += vs.Len()
		}
	}
	return n
}

var errNotMigrated = fmt.Errorf("%w: the database has no Postgram schema yet; call Migrate", driver.ErrUnavailable)

func (ix *index) space(ws string) *space {
	sp := ix.spaces[ws]
	if sp == nil {
		sp = &space{sets: map[int64]*vecscan.Set{}}
		ix.spaces[ws] = sp
	}
	return sp
}

// putEntity inserts or replaces an entity's attributes.
func (ix *index) putEntity(ws string, a entAttr) {
	if loc, ok := ix.entLoc[a.rid]; ok {
		cur := &loc.sp.ents[loc.slot]
		if loc.sp == ix.spaces[ws] && cur.ID == a.ID {
			if !cur.live || !cur.FilterView.Equal(&a.FilterView) {
				loc.sp.attrGen++
			}
			loc.sp.indexHead(loc.slot, cur.Head, a.Head)
			*cur = a
			loc.sp.entityChanged(loc.slot)
			return
		}
		ix.dropEntity(a.rid) // the rid was reused by another entity
	}
	sp := ix.space(ws)
	var slot int32
	if n := len(sp.free); n > 0 {
		slot = sp.free[n-1]
		sp.free = sp.free[:n-1]
		sp.ents[slot] = a
	} else {
		slot = int32(len(sp.ents))
		sp.ents = append(sp.ents, a)
	}
	ix.entLoc[a.rid] = entLoc{sp, slot}
	sp.indexHead(slot, nil, a.Head)
	sp.entityChanged(slot)
}

// indexHead moves an entity's entries in the head index from the lexemes
// of its old head to those of its new one.
func (sp *space) indexHead(slot int32, old, new []byte) {
	sp.heads = sp.heads.Index(slot, old, new)
}

func (ix *index) dropEntity(rid int64) {
	loc, ok := ix.entLoc[rid]
	if !ok {
		return
	}
	loc.sp.indexHead(loc.slot, loc.sp.ents[loc.slot].Head, nil)
	loc.sp.ents[loc.slot] = entAttr{}
	loc.sp.attrGen++ // its slot may go to another entity
	loc.sp.free = append(loc.sp.free, loc.slot)
	loc.sp.entityChanged(loc.slot)
	delete(ix.entLoc, rid)
}

// entityChanged records that the entity in slot changed (kwindex.Masks).
// The caller holds the index's lock for writing.
func (sp *space) entityChanged(slot int32) {
	sp.masks.Changed(slot, sp.view)
}

func (ix *index) dropVector(chunkRID int64) {
	loc, ok := ix.chunkLoc[chunkRID]
	if !ok {
		return
	}
	if sp := ix.spaces[loc.ws]; sp != nil {
		if vs := sp.sets[loc.model]; vs != nil {
			vs.Remove(chunkRID)
		}
	}
	delete(ix.chunkLoc, chunkRID)
}

const entityAttrCols = `rid, workspace_id, id, type, status, visibility, owner, tags, memory_role, client_id, updated_at`

// entityAttrHeadSQL selects entityAttrCols and the head (entity_heads.tsv)
// of the entities whose rids are the JSON array ?.
const entityAttrHeadSQL = "SELECT " + entityAttrCols + `, (SELECT h.tsv FROM entity_heads h WHERE h.rid = entities.rid)
	FROM (SELECT DISTINCT value FROM json_each(?)) j CROSS JOIN entities ON entities.rid = j.value`

func scanEntAttr(rows *sql.Rows) (string, entAttr, error) {
	var (
		a       entAttr
		ws, id  string
		tags    string
		role    sql.NullString
		typ, st string
		vis     string
		updated int64
	)
	if err := rows.Scan(&a.rid, &ws, &id, &typ, &st, &vis, &a.Owner, &tags, &role, &a.ClientID, &updated, &a.Head); err != nil {
		return "", a, err
	}
	var err error
	if a.ID, err = uuid.Parse(id); err != nil {
		return "", a, fmt.Errorf("entity %q: %w", id, err)
	}
	a.live = true
	a.Type, a.Status, a.Visibility = driver.EntityType(typ), driver.Status(st), driver.Visibility(vis)
	if tags != "[]" {
		if err := json.Unmarshal([]byte(tags), &a.Tags); err != nil {
			return "", a, fmt.Errorf("tags of entity %s: %w", id, err)
		}
	}
	if role.Valid {
		a.MemoryRole = role.String
	}
	a.UpdatedAt = updated
	a.HeadLen = kwindex.Length(a.Head)
	return ws, a, nil
}

// freshKey marks a context whose operation began with a check of this
// index (Store.Refresh); its value is the *index.
type freshKey struct{}

// ensureFresh brings the index up to date with the file when another
// connection (another process, or this one's writer) committed since the
// last check. Every commit that finished before the call is reflected when
// it returns: the check it relies on starts after it arrives. Concurrent
// callers share checks (each search makes several calls, and the check
// runs on one connection), so under load one check serves every caller
// that was waiting when it started.
func (ix *index) ensureFresh(ctx context.Context) error {
	if !ix.isLoaded() {
		return errNotMigrated
	}
	if fresh, _ := ctx.Value(freshKey{}).(*index); fresh == ix {
		return nil // checked when the operation began (Store.Refresh)
	}
	ix.freshMu.Lock()
	defer ix.freshMu.Unlock()
	// A check already running may have read data_version before this
	// call's predecessors committed: this call needs the next one.
	target := ix.freshStarted + 1
	for ix.freshDone < target {
		if ix.freshRunning {
			ix.freshCond.Wait()
			continue
		}
		ix.freshRunning = true
		ix.freshStarted = max(ix.freshStarted, target)
		ix.freshMu.Unlock()
		err := ix.check(ctx)
		ix.freshMu.Lock()
		ix.freshRunning = false
		if err == nil {
			ix.freshDone = max(ix.freshDone, target)
		}
		ix.freshCond.Broadcast()
		if err != nil {
			return err // waiters start a check of their own
		}
	}
	return nil
}

// check compares PRAGMA data_version with the last one seen and catches
// up when it changed.
func (ix *index) check(ctx context.Context) error {
	ix.syncMu.Lock()
	defer ix.syncMu.Unlock()
	if ix.versionStmt == nil {
		st, err := ix.s.watch.PrepareContext(ctx, "PRAGMA data_version")
		if err != nil {
			return fmt.Errorf("sqlite: check for changes: %w", mapErr(err))
		}
		ix.versionStmt = st
	}
	var dv int64
	if err := ix.versionStmt.QueryRowContext(ctx).Scan(&dv); err != nil {
		return fmt.Errorf("sqlite: check for changes: %w", mapErr(err))
	}
	if ix.haveVersion && dv == ix.dataVersion {
		return nil
	}
	if err := ix.catchUp(ctx); err != nil {
		return err
	}
	ix.dataVersion, ix.haveVersion = dv, true
	return nil
}

// catchUpReloadAt is the change-log backlog above which catchUp loads the
// index again instead of applying the entries.
const catchUpReloadAt = 20_000

// catchUp applies the change_log entries after the last one applied.
func (ix *index) catchUp(ctx context.Context) error {
	ix.mu.RLock()
	applied := ix.applied
	ix.mu.RUnlock()
	tx, err := ix.s.r.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("sqlite: update vector index: %w", mapErr(err))
	}
	defer tx.Rollback()
	// Statements through the read pool's cache: a catch-up follows every
	// write, and parsing its statements afresh cost more than running them.
	query := func(q string, args ...any) (*sql.Rows, error) {
		st, cached, err := ix.s.stmts.get(ctx, ix.s.r, q)
		if err != nil {
			return nil, err
		}
		if !cached {
			defer st.Close()
		}
		return tx.StmtContext(ctx, st).QueryContext(ctx, args...)
	}
	// The entries after the last one applied. AUTOINCREMENT numbers them
	// without gaps, so a first entry past applied+1 means entries were
	// pruned before this process saw them (checked: then start over).
	// A large backlog (a restore, a bulk import by another process) is
	// read faster by loading the whole index again in bulk than entry by
	// entry.
	var backlog int64
	rows, err := query("SELECT coalesce(max(seq), 0) - ? FROM change_log", applied)
	if err == nil {
		if !rows.Next() {
			err = rows.Err()
			if err == nil {
				err = sql.ErrNoRows
			}
		} else {
			err = rows.Scan(&backlog)
		}
		rows.Close()
	}
	if err != nil {
		return fmt.Errorf("sqlite: update vector index: %w", mapErr(err))
	}
	if backlog > catchUpReloadAt {
		tx.Rollback()
		ix.s.log.Info("index far behind the change log; loading it again", "entries", backlog)
		return ix.load(ctx)
	}
	ents, chunks := map[int64]bool{}, map[int64]bool{}
	cached := map[int64]bool{} // entities changed in columns only the entity cache holds
	keys := false              // an API key changed
	hi := applied
	rows, err = query("SELECT seq, kind, rid FROM change_log WHERE seq > ? ORDER BY seq", applied)
	if err != nil {
		return fmt.Errorf("sqlite: update vector index: %w", mapErr(err))
	}
	for rows.Next() {
		var seq, rid int64
		var kind int
		if err := rows.Scan(&seq, &kind, &rid); err != nil {
			rows.Close()
			return fmt.Errorf("sqlite: update vector index: %w", err)
		}
		if hi == applied && seq > applied+1 {
			var lo int64
			if err := tx.QueryRowContext(ctx, "SELECT min(seq) FROM change_log").Scan(&lo); err != nil {
				rows.Close()
				return fmt.Errorf("sqlite: update vector index: %w", mapErr(err))
			}
			if lo > applied+1 {
				rows.Close()
				tx.Rollback()
				ix.s.log.Info("vector index fell behind the change log; reloading it")
				return ix.load(ctx)
			}
		}
		hi = seq
		switch kind {
		case 1:
			ents[rid] = true
		case 2:
			chunks[rid] = true
		case 3:
			keys = true
		case 4:
			cached[rid] = true
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return fmt.Errorf("sqlite: update vector index: %w", mapErr(err))
	}
	if hi == applied {
		return nil
	}
	// Before the index applies them: a read that finds the index fresh
	// must not find these entities' old rows in the cache.
	ix.s.ents.InvalidateRIDs(ents, cached)

	type entRow struct {
		ws string
		a  entAttr
	}
	var entRows []entRow
	if len(ents) > 0 {
		rows, err := query(entityAttrHeadSQL, ridList(ents))
		entRows, err = collectRows(rows, err, func(rows *sql.Rows) (entRow, error) {
			ws, a, err := scanEntAttr(rows)
			return entRow{ws, a}, err
		})
		if err != nil {
			return fmt.Errorf("sqlite: update vector index: %w", err)
		}
	}
	type vecRow struct {
		crid, model, erid int64
		dims              int
		ws                string
		chunk             uuid.UUID
		vec               []float32
	}
	var vecRows []vecRow
	if len(chunks) > 0 {
		rows, err := query(`SELECT v.chunk_rid, v.workspace_id, v.chunk_id, v.entity_rid, v.model_id, m.dimensions, v.embedding
			FROM (SELECT DISTINCT value FROM json_each(?)) j CROSS JOIN chunk_embeddings v ON v.chunk_rid = j.value
			CROSS JOIN embedding_models m ON m.id = v.model_id`, ridList(chunks))
		if err != nil {
			return fmt.Errorf("sqlite: update vector index: %w", mapErr(err))
		}
		for rows.Next() {
			var r vecRow
			var cid string
			var blob sql.RawBytes
			if err := rows.Scan(&r.crid, &r.ws, &cid, &r.erid, &r.model, &r.dims, &blob); err != nil {
				rows.Close()
				return fmt.Errorf("sqlite: update vector index: %w", err)
			}
			if r.chunk, err = uuid.Parse(cid); err != nil || len(blob) != 4*r.dims {
				continue
			}
			r.vec = vecscan.DecodeVector(blob, make([]float32, 0, r.dims))
			vecRows = append(vecRows, r)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("sqlite: update vector index: %w", mapErr(err))
		}
	}
	var docRows []docRow
	if len(chunks) > 0 {
		// Chunks are immutable (an entity's new content gets new chunks),
		// so a chunk already indexed is kept; most of these are chunks
		// whose embedding changed.
		rows, err := query(`SELECT c.rid, c.workspace_id, c.id, c.entity_rid, c.content, c.tsv
			FROM (SELECT DISTINCT value FROM json_each(?)) j CROSS JOIN chunks c ON c.rid = j.value`, ridList(chunks))
		if docRows, err = collectRows(rows, err, scanDocRow); err != nil {
			return fmt.Errorf("sqlite: update keyword index: %w", err)
		}
	}
	tx.Rollback()

	ix.mu.Lock()
	defer ix.mu.Unlock()
	if ix.applied != applied {
		return nil // a reload overtook us; it is at least as new
	}
	// Entities first, so new vectors can point at them; deleted entities
	// lose their chunks (logged too) below before their slots are reused.
	seen := make(map[int64]bool, len(entRows))
	for _, r := range entRows {
		ix.putEntity(r.ws, r.a)
		seen[r.a.rid] = true
	}
	for rid := range chunks {
		ix.dropVector(rid)
	}
	for _, r := range vecRows {
		el, ok := ix.entLoc[r.erid]
		if !ok {
			continue
		}
		sp := ix.space(r.ws)
		vs := sp.sets[r.model]
		if vs == nil {
			vs = vecscan.New(r.dims)
			sp.sets[r.model] = vs
		}
		vs.Put(r.crid, r.chunk, el.slot, r.vec)
		ix.chunkLoc[r.crid] = chunkLoc{r.ws, r.model}
	}
	ix.applyDocs(chunks, docRows)
	if keys {
		ix.keysGen.Add(1)
	}
	for rid := range ents {
		if !seen[rid] {
			ix.dropEntity(rid)
		}
	}
	ix.applied = hi
	return nil
}

// collectRows scans every row of a query's result (rows and err as the
// query returned them) and closes it.
func collectRows[T any](rows *sql.Rows, err error, scan func(*sql.Rows) (T, error)) ([]T, error) {
	if err != nil {
		return nil, mapErr(err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	return out, mapErr(rows.Err())
}

// docRow is a chunk row read for the keyword index.
type docRow struct {
	ws   string
	erid int64
	d    kwindex.Doc
}

func scanDocRow(rows *sql.Rows) (docRow, error) {
	var r docRow
	var cid string
	if err := rows.Scan(&r.d.RID, &r.ws, &cid, &r.erid, &r.d.Content, &r.d.TSV); err != nil {
		return r, err
	}
	var err error
	if r.d.Chunk, err = uuid.Parse(cid); err != nil {
		return r, fmt.Errorf("chunk %q: %w", cid, err)
	}
	return r, nil
}

// applyDocs brings the keyword index in line with the chunks whose rids
// changed: rows holds those that exist. The caller holds ix.mu and has
// applied the entity changes (their slots) but not yet dropped entities.
func (ix *index) applyDocs(changed map[int64]bool, rows []docRow) {
	keep := make(map[int64]bool, len(rows))
	for _, r := range rows {
		if sp := ix.spaces[r.ws]; sp != nil && sp.kw != nil {
			if sp.kw.Holds(r.d.RID, r.d.Chunk) {
				keep[r.d.RID] = true
			}
		}
	}
	for rid := range changed {
		if keep[rid] {
			continue
		}
		for _, sp := range ix.spaces { // a process holds few workspaces
			if sp.kw != nil {
				sp.kw.Remove(rid)
			}
		}
	}
	slices.SortFunc(rows, func(a, b docRow) int { return cmp.Compare(a.d.RID, b.d.RID) })
	for _, r := range rows {
		if !keep[r.d.RID] {
			ix.addDoc(r)
		}
	}
	for _, sp := range ix.spaces {
		if sp.kw != nil && sp.kw.NeedsRebuild() {
			sp.kw = sp.kw.Rebuilt()
		}
	}
}

// addDoc indexes a chunk for keywords, if its entity is known.
func (ix *index) addDoc(r docRow) {
	el, ok := ix.entLoc[r.erid]
	if !ok || el.sp != ix.spaces[r.ws] {
		return
	}
	if el.sp.kw == nil {
		el.sp.kw = kwindex.New()
	}
	r.d.Ent = el.slot
	el.sp.kw.Add(r.d)
}

func ridList(m map[int64]bool) string {
	var b strings.Builder
	b.WriteByte('[')
	first := true
	for rid := range m {
		if !first {
			b.WriteByte(',')
		}
		first = false
		b.WriteString(strconv.FormatInt(rid, 10))
	}
	b.WriteByte(']')
	return b.String()
}

// admits evaluates a filter's conditions (driver.EntityFilter.Matcher,
// the same rules filterSQL renders in SQL) on an entity.
func admits(m driver.Matcher, a *entAttr) bool {
	return a.live && m.Admits(&a.FilterView)
}

// searchVectors ranks workspace ws's vectors of model against x.
func (ix *index) searchVectors(ws string, model int64, x []float32, f *driver.EntityFilter, k int) ([]vecscan.Scored, error) {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	if !ix.loaded {
		return nil, errNotMigrated
	}
	sp := ix.spaces[ws]
	if sp == nil {
		return nil, nil
	}
	vs := sp.sets[model]
	if vs == nil || vs.Len() == 0 {
		return nil, nil
	}
	if len(x) != vs.Dims() {
		return nil, errors.New("query dimensions differ from the index")
	}
	admitted, key, keyed := sp.masks.AdmittedKey(f, len(sp.ents), sp.view)
	if !keyed {
		return vs.TopK(x, admitted, k, ix.s.cfg.ScanWorkers), nil
	}
	// A query asked again ranks only the vectors that changed since
	// (agents repeat their queries).
	return vs.TopKCached(x, admitted, k, ix.s.cfg.ScanWorkers, key, sp.attrGen), nil
}

// similarities returns the exact cosine similarity of each chunk (by rid)
// that has an embedding of model, as pgvector reports it: 1 minus the
// cosine distance (rounded as that subtraction rounds).
func (ix *index) similarities(ws string, model int64, x []float32, rids []int64) map[int64]float64 {
	return similaritiesBy(ix, ws, model, x, rids, (*vecscan.Set).Similarity)
}

// similaritiesOf is similarities for chunks given by id.
func (ix *index) similaritiesOf(ws string, model int64, x []float32, ids []uuid.UUID) map[uuid.UUID]float64 {
	return similaritiesBy(ix, ws, model, x, ids, (*vecscan.Set).SimilarityOf)
}

func similaritiesBy[K comparable](ix *index, ws string, model int64, x []float32, keys []K,
	sim func(*vecscan.Set, []float32, float64, K) (float64, bool)) map[K]float64 {
	ix.mu.RLock()
	defer ix.mu.RUnlock()
	out := make(map[K]float64, len(keys))
	sp := ix.spaces[ws]
	if sp == nil {
		return out
	}
	vs := sp.sets[model]
	if vs == nil || len(x) != vs.Dims() {
		return out
	}
	xss := vecscan.SquaredNorm(x)
	for _, k := range keys {
		if s, ok := sim(vs, x, xss, k); ok {
			out[k] = 1 - (1 - s)
		}
	}
	return out
}
