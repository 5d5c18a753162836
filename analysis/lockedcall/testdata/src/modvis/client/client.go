// want package:"\\) sets modvis/internal/clock.Options.OnTick from outside; sets modvis/internal/clock.Sleep2 from outside; sets modvis/internal/clock.Yield2 from outside}"

// Package client calls, under its lock, function values that the module's
// internal packages made: they are visible code.
package client

import (
	"context"
	"sync"
	"time"

	"modvis/internal/clock"
	"modvis/internal/transport"
	"modvis/public"
)

type Client struct {
	mu    sync.Mutex
	close func()
	stop  func()
}

func init() { clock.Sleep = time.Sleep }

func New() *Client {
	_, closeFn := transport.Open()
	return &Client{close: closeFn, stop: transport.Watch(context.Background())}
}

func (c *Client) tick() {}

func (c *Client) Tick() time.Time { // want Tick:`locks c\.mu: Tick → c\.mu\.Lock`
	c.mu.Lock()
	defer c.mu.Unlock()
	stop := clock.AfterFunc(time.Second, c.tick)
	stop()
	c.close()
	c.stop()
	clock.Sleep(0)
	public.Hook()
	public.Settable() // want `call of public.Settable \(a package variable\) while c.mu is held`
	clock.Sleep2()    // want `call of clock.Sleep2 \(a package variable\) while c.mu is held`
	clock.Yield2()    // want `call of clock.Yield2 \(a package variable\) while c.mu is held`
	clock.Gosched()
	clock.Default.OnTick() // want `call of clock.Default.OnTick \(a field\) while c.mu is held`
	return clock.Now()
}
