package serving

import "sync"

// Wakeup wakes the controller: Kick after any change it should act on,
// Demand when a request waits at the gateway for an instance of a service
// scaled to zero (gateway.Options.Demand). It is made before the gateway
// and the controller, so that each can be built with it; neither call
// blocks.
type Wakeup struct {
	c      chan struct{}
	demand sync.Map // service id → struct{}: a request waits at the gateway for an instance
}

// NewWakeup makes a Wakeup.
func NewWakeup() *Wakeup { return &Wakeup{c: make(chan struct{}, 1)} }

// Kick wakes the controller.
func (w *Wakeup) Kick() {
	select {
	case w.c <- struct{}{}:
	default:
	}
}

// Demand tells the controller that a request waits at the gateway for an
// instance of a service scaled to zero: the pass it wakes at once brings
// each model version of the service at zero instances that takes traffic
// to one, without waiting for a cooldown.
func (w *Wakeup) Demand(serviceID string) {
	w.demand.Store(serviceID, struct{}{})
	w.Kick()
}

// takeDemand reports whether a request waited for serviceID since the
// last look, and forgets it.
func (w *Wakeup) takeDemand(serviceID string) bool {
	_, ok := w.demand.LoadAndDelete(serviceID)
	return ok
}

// forget drops the demand of a service that is gone.
func (w *Wakeup) forget(serviceID string) { w.demand.Delete(serviceID) }
