package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Tool pins (issue #20 item 3, "tool pinning"): the first definition
// seen of each tool of a server is pinned; a later, different definition
// is held beside the pin until the person accepts it. The definitions are
// canonical JSON of package pin; the store only keeps them.

// PinNamespace is the Namespace of the ChangeOther events of pin writes.
const PinNamespace = "tool-pins"

// ErrHeldChanged: an accept named the held definition it was shown, and
// the server has changed the tool again since.
var ErrHeldChanged = errors.New("the tool's definition changed again since it was shown; review it again")

// ToolPin is one pinned tool of a server.
type ToolPin struct {
	ServerID, Tool string
	Hash           string
	Definition     []byte
	Pinned         time.Time
	// Held is the changed definition waiting for the person; nil when
	// none.
	Held *HeldDefinition
}

// HeldDefinition is a definition that differs from the pinned one.
type HeldDefinition struct {
	Hash       string
	Definition []byte
	Seen       time.Time
}

// PinAction says what a PinOp does.
type PinAction int

// Pin actions.
const (
	// PinFirst pins a tool seen for the first time; a tool already pinned
	// keeps its pin.
	PinFirst PinAction = iota + 1
	// PinHold records a changed definition beside the pin.
	PinHold
	// PinRelease forgets the held definition (the server went back to the
	// pinned one).
	PinRelease
	// PinReplace pins a new definition and forgets any held one (a
	// trusted server's change).
	PinReplace
)

// PinOp is one change of a server's pins.
type PinOp struct {
	Action     PinAction
	Tool, Hash string
	Definition []byte
}

// ToolPins returns the pins of a server by tool name, with their
// definitions: for review and tests; an evaluation reads PinSummaries.
func (s *DB) ToolPins(ctx context.Context, serverID string) (map[string]ToolPin, error) {
	out := map[string]ToolPin{}
	err := s.readTx(ctx, func(tx *txn) error {
		clear(out)
		l, err := queryPins(ctx, tx, `AND server_id = ?`, serverID)
		for _, p := range l {
			out[p.Tool] = p
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: read the tool pins of %q: %w", serverID, err)
	}
	return out, nil
}

// PinSummary is what an evaluation needs of a pin: names, hashes and
// sizes, never the definitions (issue #20 item 3 review: a hostile
// server's pins were read back whole, up to 1 MiB each, on every
// listing).
type PinSummary struct {
	Tool, Hash string
	// HeldHash is the hash of the held definition, "" when none.
	HeldHash string
	// Bytes and HeldBytes are the sizes of the stored pinned and held
	// definitions.
	Bytes, HeldBytes int64
}

// PinSummaries returns a server's pins by tool name, without their
// definitions.
func (s *DB) PinSummaries(ctx context.Context, serverID string) (map[string]PinSummary, error) {
	out := map[string]PinSummary{}
	err := s.readTx(ctx, func(tx *txn) error {
		clear(out)
		// octet_length reads the size from the record header: the
		// definitions themselves are not loaded.
		rows, err := tx.query(ctx, `SELECT tool, hash, coalesce(held_hash, ''),
			octet_length(definition), coalesce(octet_length(held_definition), 0)
			FROM tool_pins WHERE user_id = ? AND server_id = ?`, tx.user(), serverID)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var p PinSummary
			if err := rows.Scan(&p.Tool, &p.Hash, &p.HeldHash, &p.Bytes, &p.HeldBytes); err != nil {
				return err
			}
			out[p.Tool] = p
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("store: read the tool pins of %q: %w", serverID, err)
	}
	return out, nil
}

// HeldHashes returns the held tools of a server, each with the hash of
// its held definition, without the definitions.
func (s *DB) HeldHashes(ctx context.Context, serverID string) (map[string]string, error) {
	out := map[string]string{}
	err := s.readTx(ctx, func(tx *txn) error {
		clear(out)
		rows, err := tx.query(ctx, `SELECT tool, held_hash FROM tool_pins WHERE user_id = ? AND server_id = ? AND held_hash IS NOT NULL`, tx.user(), serverID)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var tool, hash string
			if err := rows.Scan(&tool, &hash); err != nil {
				return err
			}
			out[tool] = hash
		}
		return rows.Err()
	})
	if err != nil {
		return nil, fmt.Errorf("store: read the held tools of %q: %w", serverID, err)
	}
	return out, nil
}

// HeldTools returns the pins with a held definition, of one server or
// (serverID "") of all, by server and tool.
func (s *DB) HeldTools(ctx context.Context, serverID string) ([]ToolPin, error) {
	var out []ToolPin
	err := s.readTx(ctx, func(tx *txn) error {
		var err error
		if serverID == "" {
			out, err = queryPins(ctx, tx, `AND held_hash IS NOT NULL`)
		} else {
			out, err = queryPins(ctx, tx, `AND held_hash IS NOT NULL AND server_id = ?`, serverID)
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("store: read held tools: %w", err)
	}
	return out, nil
}

func queryPins(ctx context.Context, tx *txn, where string, args ...any) ([]ToolPin, error) {
	rows, err := tx.query(ctx, `SELECT server_id, tool, hash, definition, pinned, held_hash, held_definition, held_seen
		FROM tool_pins WHERE user_id = ? `+where+` ORDER BY server_id, tool`, append([]any{tx.user()}, args...)...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []ToolPin
	for rows.Next() {
		var (
			p      ToolPin
			def    string
			pinned int64
			hh, hd sql.NullString
			seen   sql.NullInt64
		)
		if err := rows.Scan(&p.ServerID, &p.Tool, &p.Hash, &def, &pinned, &hh, &hd, &seen); err != nil {
			return nil, err
		}
		p.Definition, p.Pinned = []byte(def), time.UnixMilli(pinned)
		if hh.Valid {
			p.Held = &HeldDefinition{Hash: hh.String, Definition: []byte(hd.String), Seen: time.UnixMilli(seen.Int64)}
		}
		out = append(out, p)
	}
	return out, rows.Err()
}

// ApplyPins makes the changes of ops to a server's pins in one
// transaction; an op that would change nothing (a first pin of a tool
// already pinned, the same held definition again) changes nothing, and
// when none changes anything no event is published. The server must
// exist.
func (s *DB) ApplyPins(ctx context.Context, serverID string, ops []PinOp) error {
	if len(ops) == 0 {
		return nil
	}
	err := s.writeTx(ctx, func(tx *txn) (*Change, error) {
		now := nowMillis()
		changed := int64(0)
		for _, op := range ops {
			var (
				res sql.Result
				err error
			)
			switch op.Action {
			case PinFirst:
				res, err = tx.exec(ctx, `INSERT INTO tool_pins (user_id, server_id, tool, hash, definition, pinned) VALUES (?, ?, ?, ?, ?, ?)
					ON CONFLICT (user_id, server_id, tool) DO NOTHING`, tx.user(), serverID, op.Tool, op.Hash, string(op.Definition), now)
			case PinHold:
				res, err = tx.exec(ctx, `UPDATE tool_pins SET held_hash = ?, held_definition = ?, held_seen = ?
					WHERE user_id = ? AND server_id = ? AND tool = ? AND hash != ? AND held_hash IS DISTINCT FROM ?`,
					op.Hash, string(op.Definition), now, tx.user(), serverID, op.Tool, op.Hash, op.Hash)
			case PinRelease:
				res, err = tx.exec(ctx, `UPDATE tool_pins SET held_hash = NULL, held_definition = NULL, held_seen = NULL
					WHERE user_id = ? AND server_id = ? AND tool = ? AND held_hash IS NOT NULL`, tx.user(), serverID, op.Tool)
			case PinReplace:
				res, err = tx.exec(ctx, `INSERT INTO tool_pins (user_id, server_id, tool, hash, definition, pinned) VALUES (?, ?, ?, ?, ?, ?)
					ON CONFLICT (user_id, server_id, tool) DO UPDATE SET hash = excluded.hash, definition = excluded.definition,
					pinned = excluded.pinned, held_hash = NULL, held_definition = NULL, held_seen = NULL
					WHERE tool_pins.hash != excluded.hash OR tool_pins.held_hash IS NOT NULL`, tx.user(), serverID, op.Tool, op.Hash, string(op.Definition), now)
			default:
				return nil, fmt.Errorf("unknown pin action %d", op.Action)
			}
			if err != nil {
				return nil, fmt.Errorf("tool %q: %w", op.Tool, err)
			}
			n, err := res.RowsAffected()
			if err != nil {
				return nil, err
			}
			changed += n
		}
		if changed == 0 {
			return nil, nil
		}
		return &Change{Kind: ChangeOther, ServerID: serverID, Namespace: PinNamespace}, nil
	})
	if err != nil {
		return fmt.Errorf("store: pin tools of %q: %w", serverID, err)
	}
	return nil
}

// AcceptHeld pins the held definitions of a server's tools: those named
// (all held ones when tools is empty). expect, when it has a tool, is the
// hash of the held definition the person was shown: another one is
// refused with ErrHeldChanged. A named tool with no held definition is
// ErrNotFound. It returns the pins as accepted.
func (s *DB) AcceptHeld(ctx context.Context, serverID string, tools []string, expect map[string]string) ([]ToolPin, error) {
	var out []ToolPin
	err := s.writeTx(ctx, func(tx *txn) (*Change, error) {
		out = out[:0]
		held, err := queryPins(ctx, tx, `AND held_hash IS NOT NULL AND server_id = ?`, serverID)
		if err != nil {
			return nil, err
		}
		byName := map[string]ToolPin{}
		for _, p := range held {
			byName[p.Tool] = p
		}
		if len(tools) == 0 {
			for _, p := range held {
				tools = append(tools, p.Tool)
			}
		}
		var missing []string
		for _, t := range tools {
			if _, ok := byName[t]; !ok {
				missing = append(missing, fmt.Sprintf("%q", t))
			}
		}
		if len(missing) > 0 {
			return nil, fmt.Errorf("server %q has no held change of tool %s: %w", serverID, strings.Join(missing, ", "), ErrNotFound)
		}
		now := nowMillis()
		for _, t := range tools {
			p := byName[t]
			if h, ok := expect[t]; ok && h != p.Held.Hash {
				return nil, fmt.Errorf("tool %q: %w", t, ErrHeldChanged)
			}
			if _, err := tx.exec(ctx, `UPDATE tool_pins SET hash = held_hash, definition = held_definition, pinned = ?,
				held_hash = NULL, held_definition = NULL, held_seen = NULL WHERE user_id = ? AND server_id = ? AND tool = ?`, now, tx.user(), serverID, t); err != nil {
				return nil, fmt.Errorf("tool %q: %w", t, err)
			}
			out = append(out, ToolPin{ServerID: serverID, Tool: t, Hash: p.Held.Hash, Definition: p.Held.Definition, Pinned: time.UnixMilli(now)})
		}
		if len(out) == 0 {
			return nil, nil
		}
		return &Change{Kind: ChangeOther, ServerID: serverID, Namespace: PinNamespace}, nil
	})
	if err != nil {
		return nil, fmt.Errorf("store: accept held tools of %q: %w", serverID, err)
	}
	return out, nil
}
