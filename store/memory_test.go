package store

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/remotemcp/remotemcp/config"
)

func TestMemory(t *testing.T) {
	m := NewMemory()
	b1 := config.Binding{Resource: "https://a.example.com", Issuer: "https://as1.example.com"}
	b2 := config.Binding{Resource: "https://a.example.com", Issuer: "https://as2.example.com"}
	k1 := SecretKey{ServerID: "a", Purpose: "oauth-access", Binding: b1}
	k2 := SecretKey{ServerID: "a", Purpose: "oauth-access", Binding: b2}
	k3 := SecretKey{ServerID: "b", Purpose: "oauth-access", Binding: b1}

	v := []byte("token1")
	m.Put(k1, v, time.Time{})
	v[0] = 'X' // Put copies
	if got, ok := m.Get(k1); !ok || string(got) != "token1" {
		t.Fatalf("Get = %q, %v", got, ok)
	}
	if _, ok := m.Get(k2); ok {
		t.Fatal("found under another binding")
	}
	got, _ := m.Get(k1)
	got[0] = 'Y' // Get copies
	if got, _ := m.Get(k1); string(got) != "token1" {
		t.Fatal("Get returned shared bytes")
	}

	m.Put(k2, []byte("short-lived"), time.Now().Add(-time.Second))
	if _, ok := m.Get(k2); ok {
		t.Fatal("expired value returned")
	}
	m.Put(k2, []byte("t2"), time.Now().Add(time.Hour))
	m.Put(k3, []byte("t3"), time.Time{})
	m.DeleteServer("a")
	if _, ok := m.Get(k1); ok {
		t.Fatal("k1 survived DeleteServer")
	}
	if _, ok := m.Get(k2); ok {
		t.Fatal("k2 survived DeleteServer")
	}
	if _, ok := m.Get(k3); !ok {
		t.Fatal("other server's value deleted")
	}
	m.Delete(k3)
	if _, ok := m.Get(k3); ok {
		t.Fatal("Delete")
	}
}

func TestMemoryConcurrent(t *testing.T) {
	m := NewMemory()
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 200 {
				k := SecretKey{ServerID: fmt.Sprint("s", i%3), Purpose: "p", Binding: config.Binding{Resource: fmt.Sprint(j % 5)}}
				m.Put(k, []byte("v"), time.Now().Add(time.Duration(j%2)*time.Hour))
				m.Get(k)
				if j%50 == 0 {
					m.DeleteServer(k.ServerID)
				}
				m.Delete(k)
			}
		})
	}
	wg.Wait()
}
