package store

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// The change feed of a gateway's database across processes (issue #23,
// "Change feed: LISTEN/NOTIFY, with the revision polling of today as the
// fallback"). Every write transaction that moves a user's revision also
// notifies feedChannel with the user's id (writeTx), which PostgreSQL
// delivers at commit to every session listening on the database. Each
// *Postgres with watched DBs keeps one connection of its own listening
// (listenLoop) and hands the users it is told about to the delivery loop
// (feedLoop), which reads their revisions, one query, and reports them to
// the watched DBs exactly as the poll does: the poll goes on, at
// PollInterval, and catches whatever a notification missed.
const (
	// feedChannel is the NOTIFY channel; notifications stay within one
	// database, so gateways on other databases of the server never hear
	// each other.
	feedChannel = "remotemcp_changes"
	// listenAppName and lockAppName are the application_name of the
	// listening and the lock connection (pg_stat_activity tells them
	// apart from the pool's).
	listenAppName = "remotemcp-listen"
	lockAppName   = "remotemcp-locks"
	// maxNotifyPayload bounds the payload taken as a user id; longer ones
	// are no user's and are ignored.
	maxNotifyPayload = 128
	// maxNotified bounds the users waiting for a targeted read; past it
	// the delivery loop reads every user's revision instead.
	maxNotified = 1024
	// listenRetryMin and listenRetryMax bound the backoff of connecting
	// the listening connection again: a restarted server is heard again
	// within listenRetryMax of accepting connections.
	listenRetryMin = 100 * time.Millisecond
	listenRetryMax = 2 * time.Second
	// listenIdle is how long the listener waits for a notification
	// before it pings its connection, so a connection that died without
	// a word (a network that dropped it) is noticed.
	listenIdle = 30 * time.Second
	// pgDialTimeout and pgStatementTimeout bound connecting and one
	// statement on the listening and the lock connection, so a server
	// that stopped answering is taken for gone rather than waited for.
	pgDialTimeout      = 10 * time.Second
	pgStatementTimeout = 10 * time.Second
)

// dialOwn opens a connection of p's own (not one of the pool's) named
// app in pg_stat_activity.
func dialOwn(ctx context.Context, cfg *pgx.ConnConfig, app string) (*pgx.Conn, error) {
	c := cfg.Copy()
	c.RuntimeParams["application_name"] = app
	dctx, cancel := context.WithTimeout(ctx, pgDialTimeout)
	defer cancel()
	return pgx.ConnectConfig(dctx, c)
}

// hardClose closes c at once, without waiting for the server: its
// session ends, and with it what the session held.
func hardClose(c *pgx.Conn) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_ = c.Close(ctx)
}

// startFeed starts the delivery and the listening goroutine, on the first
// watched DB. Called with p.mu held.
func (p *Postgres) startFeed() {
	if p.polling {
		return
	}
	p.polling = true
	go p.feedLoop()
	go p.listenLoop()
}

// feedLoop reads the revisions of the users notified, and every user's
// once per PollInterval, and hands each watched DB its own.
func (p *Postgres) feedLoop() {
	defer close(p.done)
	t := time.NewTicker(p.poll)
	defer t.Stop()
	retry := listenRetryMin
	var again <-chan time.Time // a failed read is tried again
	for {
		all := false
		select {
		case <-p.ctx.Done():
			return
		case <-t.C:
			all = true
		case <-again:
			again = nil
		case <-p.wake:
		}
		users, full := p.takeNotified()
		if !all && !full && len(users) == 0 {
			continue
		}
		var (
			revs map[string]int64
			err  error
		)
		if all || full {
			users = nil
			revs, err = p.revisions(p.ctx)
		} else {
			revs, err = p.userRevisions(p.ctx, users)
		}
		if err != nil {
			if p.ctx.Err() != nil {
				return
			}
			p.log.Warn("store: change feed: read revisions", "db", p.root.path, "err", err)
			if !all && !full {
				// What was notified is read again soon; the poll
				// would catch it too, but it may be far away.
				p.notifyAll()
				again = time.After(retry)
				retry = min(2*retry, listenRetryMax)
			}
			continue
		}
		retry = listenRetryMin
		p.deliver(revs, users)
	}
}

// deliver hands every watched DB of users (every watched DB when users
// is nil) its revision in revs; a user missing from revs was removed.
func (p *Postgres) deliver(revs map[string]int64, users map[string]struct{}) {
	type seen struct {
		s         *DB
		last, cur int64
	}
	var changed []seen
	p.mu.Lock()
	for s, last := range p.views {
		if users != nil {
			if _, ok := users[s.user]; !ok {
				continue
			}
		}
		cur, ok := revs[s.user]
		if !ok {
			cur = -1 // removed: subscribers re-read and find nothing
		}
		if cur != last {
			changed = append(changed, seen{s, last, cur})
			p.views[s] = cur
		}
	}
	p.mu.Unlock()
	gone := map[string]bool{}
	for _, c := range changed {
		if c.cur == -1 && c.last != -1 {
			gone[c.s.user] = true
		}
	}
	if len(gone) > 0 {
		p.rmu.Lock()
		hooks := slices.Clone(p.removed)
		p.rmu.Unlock()
		for id := range gone {
			for _, f := range hooks {
				f(id)
			}
		}
	}
	// Only this goroutine delivers, so each DB sees its revisions in
	// order and each foreign write once.
	for _, c := range changed {
		c.s.observe(c.last, c.cur)
	}
}

// userRevisions reads the revisions of users; removed users are missing.
func (p *Postgres) userRevisions(ctx context.Context, users map[string]struct{}) (map[string]int64, error) {
	ids := make([]string, 0, len(users))
	for id := range users {
		ids = append(ids, id)
	}
	rows, err := p.db.QueryContext(ctx, `SELECT id, revision FROM users WHERE id = ANY($1)`, ids)
	if err != nil {
		return nil, err
	}
	return scanRevisions(rows)
}

// notified records a notification's payload, a user id, for the delivery
// loop, if a DB of that user is watched here; anything else (another
// program's payload, a user nobody here watches) is ignored.
func (p *Postgres) notified(payload string) {
	if payload == "" || len(payload) > maxNotifyPayload {
		return
	}
	p.mu.Lock()
	_, ok := p.watched[payload]
	p.mu.Unlock()
	if !ok {
		return
	}
	p.nmu.Lock()
	if len(p.notify) < maxNotified {
		p.notify[payload] = struct{}{}
	} else {
		p.notifyFull = true
	}
	p.nmu.Unlock()
	p.kick()
}

// notifyAll asks the delivery loop for a read of every user's revision:
// notifications may have been missed.
func (p *Postgres) notifyAll() {
	p.nmu.Lock()
	p.notifyFull = true
	p.nmu.Unlock()
	p.kick()
}

// kick wakes the delivery loop.
func (p *Postgres) kick() {
	select {
	case p.wake <- struct{}{}:
	default:
	}
}

// takeNotified returns and forgets the users notified since the last
// call, and whether every user's revision must be read.
func (p *Postgres) takeNotified() (map[string]struct{}, bool) {
	p.nmu.Lock()
	defer p.nmu.Unlock()
	users, full := p.notify, p.notifyFull
	p.notify, p.notifyFull = map[string]struct{}{}, false
	return users, full
}

// listenLoop keeps a connection listening on feedChannel until p closes,
// connecting again, backing off from listenRetryMin to listenRetryMax,
// whenever it is lost (a restart of the server). Each time it listens
// again (the first time too), it asks for a read of every revision: what
// was notified meanwhile was not heard.
func (p *Postgres) listenLoop() {
	defer close(p.listenDone)
	wait := listenRetryMin
	failing := false
	for {
		c, err := p.listenConn()
		if err != nil {
			if p.ctx.Err() != nil {
				return
			}
			if !failing {
				p.log.Warn("store: change feed: cannot listen for other processes' writes; polling meanwhile, retrying", "db", p.root.path, "err", err)
				failing = true
			}
			if sleepCtx(p.ctx, wait) != nil {
				return
			}
			wait = min(2*wait, listenRetryMax)
			continue
		}
		if failing {
			p.log.Info("store: change feed: listening again", "db", p.root.path)
			failing = false
		}
		// The server is back: lost advisory locks are taken again now
		// rather than at the keeper's next try.
		p.locks.wake()
		wait = listenRetryMin
		p.notifyAll()
		if p.onListen != nil {
			p.onListen(c.PgConn().PID())
		}
		err = p.listen(c)
		hardClose(c)
		if p.ctx.Err() != nil {
			return
		}
		// The lock connection has likely gone the same way: its keeper
		// looks now rather than at its next ping.
		p.locks.wake()
		p.log.Warn("store: change feed: lost the listening connection; connecting again", "db", p.root.path, "err", err)
	}
}

// listenConn connects and listens.
func (p *Postgres) listenConn() (*pgx.Conn, error) {
	c, err := dialOwn(p.ctx, p.pgcfg, listenAppName)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	ctx, cancel := context.WithTimeout(p.ctx, pgStatementTimeout)
	defer cancel()
	if _, err := c.Exec(ctx, "LISTEN "+feedChannel); err != nil {
		hardClose(c)
		return nil, fmt.Errorf("listen: %w", err)
	}
	return c, nil
}

// listen hands each notification to the delivery loop until the
// connection fails or p closes.
func (p *Postgres) listen(c *pgx.Conn) error {
	for {
		wctx, cancel := context.WithTimeout(p.ctx, listenIdle)
		n, err := c.WaitForNotification(wctx)
		idle := wctx.Err() != nil
		cancel()
		if err != nil {
			if p.ctx.Err() != nil {
				return p.ctx.Err()
			}
			if !idle || c.IsClosed() {
				return err
			}
			// Nothing for a while: make sure the connection lives.
			pctx, cancel := context.WithTimeout(p.ctx, pgStatementTimeout)
			err := c.Ping(pctx)
			cancel()
			if err != nil {
				return fmt.Errorf("ping: %w", err)
			}
			continue
		}
		if n.Channel == feedChannel {
			p.notified(n.Payload)
		}
	}
}
