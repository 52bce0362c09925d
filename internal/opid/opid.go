// Package opid makes the operation ids of tool calls: the one generator
// for the engine, the front end and the CLI (issue #21 item 2).
//
// An id is a prefix and 20 characters of the base32 alphabet, as before
// ("op-" + rand.Text()[:20]), but crypto/rand is read once per process,
// not once per call: the characters are an AES-128 encryption of a call
// counter under a key drawn at start. The ids stay unguessable (knowing
// some ids of this process tells nothing of the next one, so an id still
// works as the capability the local API's cancel, approval and sampling
// routes take it for), and being a permutation of the counter cut to 100
// bits they do not repeat in practice.
package opid

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"sync"
	"sync/atomic"
)

// Len is how many characters follow the prefix.
const Len = 20

const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"

// gen is the process's generator: a key drawn once and a counter. It is
// set up once and never replaced, so it is no mutable state beyond the
// counter.
var gen = func() *generator {
	var key [16]byte
	rand.Read(key[:])
	b, err := aes.NewCipher(key[:])
	if err != nil {
		panic("opid: " + err.Error()) // a 16-byte key is always valid
	}
	return &generator{block: b}
}()

// blocks are the buffers of New's encryption.
var blocks = sync.Pool{New: func() any { return new([32]byte) }}

type generator struct {
	block cipher.Block
	n     atomic.Uint64
}

// New returns prefix and Len characters that no other call of this
// process gets, in one allocation.
func New(prefix string) string {
	// The block cipher's interface call makes its arguments escape: they
	// come from a pool, so the id's string is the one allocation.
	bp := blocks.Get().(*[32]byte)
	in, out := bp[:16], bp[16:]
	clear(in[:8])
	binary.BigEndian.PutUint64(in[8:], gen.n.Add(1))
	gen.block.Encrypt(out, in)
	var buf [64]byte
	b := append(buf[:0], prefix...)
	// 20 characters of 5 bits each: the first 100 bits of the block.
	hi := binary.BigEndian.Uint64(out[:8])
	lo := binary.BigEndian.Uint64(out[8:])
	for i := range Len {
		var v uint64
		switch {
		case i < 12: // bits 0..59 from hi
			v = hi >> (59 - 5*i) & 31
		case i == 12: // bits 60..64: 4 from hi, 1 from lo
			v = (hi&15)<<1 | lo>>63
		default: // bits 65..99 from lo
			v = lo >> (58 - 5*(i-13)) & 31
		}
		b = append(b, alphabet[v])
	}
	blocks.Put(bp)
	return string(b)
}
