package store

import (
	"bytes"
	"crypto/rand"
	"errors"
	"testing"

	"github.com/remotemcp/remotemcp/config"
)

func testSealer(t testing.TB, seed byte) *sealer {
	t.Helper()
	key := bytes.Repeat([]byte{seed}, keySize)
	s, err := newSealer(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSealAAD(t *testing.T) {
	base := SecretKey{ServerID: "a", Purpose: PurposeRefreshToken, Binding: config.Binding{Resource: "https://r.example.com/ab", Issuer: "https://as.example.com"}}
	s := testSealer(t, 1)
	blob, err := s.seal(LocalUser, base, []byte("secret"))
	if err != nil {
		t.Fatal(err)
	}
	if pt, err := s.open(LocalUser, base, blob); err != nil || string(pt) != "secret" {
		t.Fatalf("open = %q, %v", pt, err)
	}
	mod := func(f func(*SecretKey)) SecretKey { k := base; f(&k); return k }
	tests := []struct {
		name string
		k    SecretKey
	}{
		{"server", mod(func(k *SecretKey) { k.ServerID = "b" })},
		{"purpose", mod(func(k *SecretKey) { k.Purpose = PurposeBearer })},
		{"resource", mod(func(k *SecretKey) { k.Binding.Resource = "https://other.example.com" })},
		{"issuer", mod(func(k *SecretKey) { k.Binding.Issuer = "https://evil.example.com" })},
		{"no issuer", mod(func(k *SecretKey) { k.Binding.Issuer = "" })},
		// Shifting bytes between adjacent fields must not give the same AAD.
		{"shift resource/issuer", mod(func(k *SecretKey) {
			k.Binding.Resource = "https://r.example.com/a"
			k.Binding.Issuer = "b" + base.Binding.Issuer
		})},
		{"shift purpose/server", mod(func(k *SecretKey) { k.Purpose = PurposeRefreshToken + "a"; k.ServerID = "" })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if bytes.Equal(sealAAD(LocalUser, tt.k), sealAAD(LocalUser, base)) {
				t.Fatal("same AAD for different keys")
			}
			if _, err := s.open(LocalUser, tt.k, blob); !errors.Is(err, ErrSealOpen) {
				t.Fatalf("open under %+v = %v, want ErrSealOpen", tt.k, err)
			}
		})
	}
	if _, err := testSealer(t, 2).open(LocalUser, base, blob); !errors.Is(err, ErrSealOpen) {
		t.Fatalf("open with another key = %v", err)
	}
	// Fresh nonce per seal: the same plaintext never seals alike.
	blob2, _ := s.seal(LocalUser, base, []byte("secret"))
	if bytes.Equal(blob[:nonceSize], blob2[:nonceSize]) || bytes.Equal(blob, blob2) {
		t.Fatal("nonce reused")
	}
}

// FuzzOpenSealed: opening arbitrary bytes never panics, and succeeds only
// for a blob this sealer produced for exactly that key.
func FuzzOpenSealed(f *testing.F) {
	s := testSealer(f, 7)
	k := SecretKey{ServerID: "srv", Purpose: PurposeRefreshToken, Binding: config.Binding{Resource: "https://r.example.com", Issuer: "https://i.example.com"}}
	// The fuzzing engine runs this function in several processes, so the
	// seeds are sealed with fixed nonces (random ones would differ per
	// process): every worker knows the same set of valid blobs.
	valid := map[string][]byte{} // blob -> plaintext
	for i, pt := range []string{"", "x", "refresh-token-value", string(bytes.Repeat([]byte{0xff}, 300))} {
		nonce := bytes.Repeat([]byte{byte(i + 1)}, nonceSize)
		blob := s.aead.Seal(nonce, nonce, []byte(pt), sealAAD(LocalUser, k))
		if got, err := s.open(LocalUser, k, blob); err != nil || string(got) != pt {
			f.Fatalf("seed %d does not open: %v", i, err)
		}
		valid[string(blob)] = []byte(pt)
		f.Add(blob, k.Purpose, k.ServerID, k.Binding.Resource, k.Binding.Issuer)
		// Seeds that are almost right.
		flipped := bytes.Clone(blob)
		flipped[len(flipped)-1] ^= 1
		f.Add(flipped, k.Purpose, k.ServerID, k.Binding.Resource, k.Binding.Issuer)
		f.Add(blob, k.Purpose, k.ServerID, k.Binding.Resource+"x", k.Binding.Issuer)
		f.Add(blob[:len(blob)-1], k.Purpose, k.ServerID, k.Binding.Resource, k.Binding.Issuer)
	}
	f.Add([]byte{}, "", "", "", "")
	f.Add(make([]byte, nonceSize), "p", "s", "r", "i")
	noise := make([]byte, 64)
	rand.Read(noise)
	f.Add(noise, k.Purpose, k.ServerID, k.Binding.Resource, k.Binding.Issuer)

	f.Fuzz(func(t *testing.T, blob []byte, purpose, serverID, resource, issuer string) {
		got := SecretKey{ServerID: serverID, Purpose: purpose, Binding: config.Binding{Resource: resource, Issuer: issuer}}
		pt, err := s.open(LocalUser, got, blob)
		if err != nil {
			if !errors.Is(err, ErrSealOpen) {
				t.Fatalf("error %v does not wrap ErrSealOpen", err)
			}
			return
		}
		want, ok := valid[string(blob)]
		if !ok || got != k || !bytes.Equal(pt, want) {
			t.Fatalf("opened a blob we did not seal for %+v: %q", got, pt)
		}
	})
}
