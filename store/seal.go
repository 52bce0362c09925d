package store

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// Sealing: AES-256-GCM under a random key kept in the data directory
// (SPEC §7, R3.11). The key file is the only thing that turns the database
// into readable tokens, so it is created 0600, never replaced silently,
// refused when other users can read it, and refused when it is not the key
// the store was created with (the key check record, keycheck.go).

const (
	keyFileName = "key"
	keySize     = 32 // AES-256
	nonceSize   = 12 // the GCM standard nonce size; random per seal
	// aadLabel versions the associated-data encoding, so a future format can
	// never open blobs of this one by accident.
	aadLabel = "remotemcp/seal/v1"
	// aadLabelUser is the encoding of a gateway user's secrets: the user
	// id is its first field.
	aadLabelUser = "remotemcp/seal/v1+user"
)

// sealer seals and opens secrets under one key. It holds no mutable state,
// so it is safe for concurrent use.
type sealer struct {
	aead cipher.AEAD
}

func newSealer(key []byte) (*sealer, error) {
	if len(key) != keySize {
		return nil, fmt.Errorf("store: seal key is %d bytes, want %d", len(key), keySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("store: seal key: %w", err)
	}
	aead, err := cipher.NewGCMWithNonceSize(block, nonceSize)
	if err != nil {
		return nil, fmt.Errorf("store: seal key: %w", err)
	}
	return &sealer{aead: aead}, nil
}

// sealAAD is the associated data of a secret: the purpose, server id and
// binding it belongs to, and, in a gateway, its user. Each field is
// length-prefixed, so no two different keys encode alike (moving bytes
// from the resource into the issuer changes the encoding), and a blob
// copied to another row fails to open.
//
// The personal user (LocalUser, and "" for the key check record) keeps
// the first encoding, so stores sealed before users existed still open;
// every other user's secrets carry the user id under aadLabelUser, so a
// row moved to another user, or from a gateway user into a personal
// store, fails to open (SPEC §9 A11).
func sealAAD(user string, k SecretKey) []byte {
	label, fields := aadLabel, []string{k.Purpose, k.ServerID, k.Binding.Resource, k.Binding.Issuer}
	if user != "" && user != LocalUser {
		label, fields = aadLabelUser, append([]string{user}, fields...)
	}
	n := len(label)
	for _, f := range fields {
		n += 4 + len(f)
	}
	b := make([]byte, 0, n)
	b = append(b, label...)
	for _, f := range fields {
		b = binary.BigEndian.AppendUint32(b, uint32(len(f)))
		b = append(b, f...)
	}
	return b
}

// seal returns nonce || ciphertext (with the GCM tag) of plaintext, bound
// to user and k.
func (s *sealer) seal(user string, k SecretKey, plaintext []byte) ([]byte, error) {
	out := make([]byte, nonceSize, nonceSize+len(plaintext)+s.aead.Overhead())
	if _, err := io.ReadFull(rand.Reader, out); err != nil {
		return nil, fmt.Errorf("store: seal %s: random nonce: %w", describeKey(k), err)
	}
	return s.aead.Seal(out, out[:nonceSize], plaintext, sealAAD(user, k)), nil
}

// open reverses seal. Any failure — short blob, wrong key, tampering, a
// different k — is ErrSealOpen wrapped with the secret's description; GCM
// does not tell these apart and neither should we.
func (s *sealer) open(user string, k SecretKey, blob []byte) ([]byte, error) {
	if len(blob) < nonceSize+s.aead.Overhead() {
		return nil, fmt.Errorf("store: open %s: blob of %d bytes is too short: %w", describeKey(k), len(blob), ErrSealOpen)
	}
	pt, err := s.aead.Open(nil, blob[:nonceSize], blob[nonceSize:], sealAAD(user, k))
	if err != nil {
		return nil, fmt.Errorf("store: open %s: %w", describeKey(k), ErrSealOpen)
	}
	return pt, nil
}

// describeKey names a secret for error messages, never its value.
func describeKey(k SecretKey) string {
	s := fmt.Sprintf("secret %q of server %q", k.Purpose, k.ServerID)
	if k.Binding.Resource != "" {
		s += fmt.Sprintf(" for resource %q", k.Binding.Resource)
	}
	if k.Binding.Issuer != "" {
		s += fmt.Sprintf(" issuer %q", k.Binding.Issuer)
	}
	return s
}

// readKeyFile loads the key file. It returns fs.ErrNotExist (wrapped) when
// there is none, so the caller can decide whether creating one is safe.
func readKeyFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("store: open key file: %w", err)
	}
	defer f.Close()
	// Stat the open file rather than the path, so the mode we check is the
	// mode of the bytes we read.
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("store: stat key file %s: %w", path, err)
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("store: key file %s is not a regular file (left untouched)", path)
	}
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("store: key file %s is accessible by group or others (mode %04o); anyone who can read it can read the stored tokens. Fix with: chmod 600 %s", path, perm, path)
	}
	// Read one byte more than a key, so an over-long file is noticed.
	key, err := io.ReadAll(io.LimitReader(f, keySize+1))
	if err != nil {
		return nil, fmt.Errorf("store: read key file %s: %w", path, err)
	}
	if len(key) != keySize {
		return nil, fmt.Errorf("store: key file %s is not a remotemcp key (want exactly %d bytes); it was left untouched", path, keySize)
	}
	return key, nil
}

// createKeyFile writes a fresh random key and publishes it atomically: the
// key is written to an O_EXCL temporary file (0600), synced, and hard-linked
// to its final name. A link never replaces an existing file, so when two
// processes race on first open exactly one key wins and the loser reads it;
// nobody ever sees a half-written key.
func createKeyFile(dir string) ([]byte, error) {
	path := filepath.Join(dir, keyFileName)
	key := make([]byte, keySize)
	if _, err := io.ReadFull(rand.Reader, key); err != nil {
		return nil, fmt.Errorf("store: create key file: random key: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".key-*") // O_EXCL, mode 0600
	if err != nil {
		return nil, fmt.Errorf("store: create key file: %w", err)
	}
	tmpName := tmp.Name()
	defer os.Remove(tmpName) // the link, if made, keeps the key
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("store: create key file: chmod: %w", err)
	}
	if _, err := tmp.Write(key); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("store: create key file: write: %w", err)
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return nil, fmt.Errorf("store: create key file: sync: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return nil, fmt.Errorf("store: create key file: close: %w", err)
	}
	if err := os.Link(tmpName, path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			// Another process created the key first; use theirs.
			return readKeyFile(path)
		}
		return nil, fmt.Errorf("store: create key file: publish %s: %w", path, err)
	}
	syncDir(dir)
	return key, nil
}

// syncDir makes a new directory entry durable. Best effort: not every
// platform can fsync a directory, and the key is already synced.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
}
