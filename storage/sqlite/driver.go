package sqlite

import (
	"database/sql"
	"database/sql/driver"
	"fmt"
	"sync"
	"sync/atomic"

	msqlite "modernc.org/sqlite"
)

// driverName is this package's private registration of modernc.org/sqlite:
// the SQL functions it adds reach only the store's own connections.
const driverName = "postgram-sqlite"

var registerOnce sync.Once

func registerDriver() {
	registerOnce.Do(func() {
		d := &msqlite.Driver{}
		// postgram_load_vector(token, chunk_rid, model_id, workspace_id,
		// chunk_id, entity_rid, embedding) hands one stored embedding to the
		// index being loaded under token. Its arguments are zero-copy views
		// of SQLite's row (VolatileArgs): a 50,000-vector load would
		// otherwise allocate and copy every embedding once more.
		d.MustRegisterFunction("postgram_load_vector", &msqlite.FunctionImpl{
			NArgs: 7, VolatileArgs: true, Scalar: loadVectorFunc,
		})
		// postgram_load_entity(token, <entityAttrCols>) does the same for an
		// entity's filter attributes.
		d.MustRegisterFunction("postgram_load_entity", &msqlite.FunctionImpl{
			NArgs: 12, VolatileArgs: true, Scalar: loadEntityFunc,
		})
		sql.Register(driverName, d)
	})
}

// loaders maps a load's token to its loader while the load runs.
var (
	loaders   sync.Map // int64 → *rangeLoader or *entLoader
	loaderSeq atomic.Int64
)

func loadVectorFunc(_ *msqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
	tok, ok := args[0].(int64)
	if !ok {
		return nil, fmt.Errorf("postgram_load_vector: bad token")
	}
	l, ok := loaders.Load(tok)
	if !ok {
		return nil, fmt.Errorf("postgram_load_vector: no load %d", tok)
	}
	crid, ok1 := args[1].(int64)
	model, ok2 := args[2].(int64)
	ws, ok3 := args[3].(string)
	cid, ok4 := args[4].(string)
	erid, ok5 := args[5].(int64)
	blob, ok6 := args[6].([]byte)
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6) {
		return nil, nil // not a well-formed row: never indexed
	}
	l.(*rangeLoader).add(crid, model, ws, cid, erid, blob)
	return nil, nil
}

func loadEntityFunc(_ *msqlite.FunctionContext, args []driver.Value) (driver.Value, error) {
	tok, _ := args[0].(int64)
	l, ok := loaders.Load(tok)
	if !ok {
		return nil, fmt.Errorf("postgram_load_entity: no load %d", tok)
	}
	str := func(v driver.Value) string { s, _ := v.(string); return s }
	rid, _ := args[1].(int64)
	updated, _ := args[11].(int64)
	var role *string
	if r, ok := args[9].(string); ok {
		role = &r
	}
	l.(*entLoader).add(rid, str(args[2]), str(args[3]), str(args[4]), str(args[5]), str(args[6]), str(args[7]),
		str(args[8]), role, str(args[10]), updated)
	return nil, nil
}
