// Package sched gives a polling waiter's core away: Yield, which the shared-memory, TCP and
// verbs waiters call between polls on a host with more ranks than cores.
package sched
