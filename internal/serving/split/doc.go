// Package split divides a service's traffic across its model versions by
// weight.
//
// The order is nginx's smooth weighted round robin: every pick adds each
// entry's weight to its running score, takes the entry with the highest
// score and subtracts the total weight from it. Over one period (the sum of
// the weights, after dividing by their greatest common divisor) every entry
// is picked exactly as often as its weight says, and the picks of an entry
// are spread out rather than bunched: weights 90/10 give nine picks of the
// first entry, one of the second, and so on.
//
// Schedule computes one period up front so that a Picker needs only one
// atomic increment per pick: it is safe for concurrent use and takes no lock.
package split
