/**
 * A stand-in for KAI Scheduler v0.17 in the lab ({@code stack: kai}, LAB.md "Under KAI Scheduler"):
 * its admission (gpusharing, hamicore, runtimeenforcement), pod-grouper, scheduler (queues, portions,
 * gpupack GPU groups, BindRequests) and binder (reservation pods, capabilities ConfigMaps, the hamicore
 * plugin's limit, the Binding), each writing to the lab's API server as its own ServiceAccount.
 * It follows {@code ../shared/reference/kai.md} on the wire — what KAI writes and reads — and is part of
 * the examples module only: it never reaches a deployable jar.
 */
@NullMarked
package io.vgpu.examples.lab.kai;

import org.jspecify.annotations.NullMarked;
