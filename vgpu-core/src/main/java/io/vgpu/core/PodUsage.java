package io.vgpu.core;

import io.vgpu.api.ContainerGrant;
import io.vgpu.api.DeviceGrant;
import io.vgpu.api.PodGrant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.jspecify.annotations.Nullable;

/**
 * What a pod's grant costs each card once its containers' usage is collapsed the way HAMi collapses it:
 * init containers run one at a time, so they count at their per-card peak with one sharing slot; app
 * containers run together, so their usage adds up and each takes a slot; a card is charged the larger
 * of the two. The engine holds one per pod that holds a grant, and a node's snapshot counts it by
 * identity, so one grant is never counted twice.
 */
final class PodUsage {
  final PodGrant grant;
  final String[] uuids;
  final int[] memory;
  final int[] cores;
  final int[] slots;
  final long totalMemory;
  final long totalCores;
  /** The queue the pod is charged to, or {@code null}; the charge is kept so a release returns exactly it. */
  final @Nullable String queue;
  /** GPU charged to {@link #queue}, in hundredths of a card. */
  final long queueGpu;
  /** CPU charged to {@link #queue}, in millicores. */
  final long queueCpu;

  private PodUsage(PodGrant grant, String[] uuids, int[] memory, int[] cores, int[] slots) {
    this(grant, uuids, memory, cores, slots, null, 0, 0);
  }

  private PodUsage(PodGrant grant, String[] uuids, int[] memory, int[] cores, int[] slots, @Nullable String queue, long queueGpu, long queueCpu) {
    this.queue = queue;
    this.queueGpu = queueGpu;
    this.queueCpu = queueCpu;
    this.grant = grant;
    this.uuids = uuids;
    this.memory = memory;
    this.cores = cores;
    this.slots = slots;
    long mem = 0;
    long core = 0;
    for (int i = 0; i < uuids.length; i++) {
      mem += memory[i];
      core += cores[i];
    }
    this.totalMemory = mem;
    this.totalCores = core;
  }

  static PodUsage of(PodGrant grant) {
    Map<String, int[]> init = new LinkedHashMap<>();
    Map<String, int[]> app = new LinkedHashMap<>();
    for (ContainerGrant c : grant.initContainers()) {
      for (DeviceGrant d : c.devices()) {
        int[] u = init.computeIfAbsent(d.uuid(), k -> new int[3]);
        u[0] = Math.max(u[0], d.memoryMiB());
        u[1] = Math.max(u[1], d.cores());
        u[2] = 1;
      }
    }
    for (ContainerGrant c : grant.containers()) {
      for (DeviceGrant d : c.devices()) {
        int[] u = app.computeIfAbsent(d.uuid(), k -> new int[3]);
        u[0] += d.memoryMiB();
        u[1] += d.cores();
        u[2]++;
      }
    }
    List<String> uuids = new ArrayList<>(init.keySet());
    for (String uuid : app.keySet()) {
      if (!init.containsKey(uuid)) {
        uuids.add(uuid);
      }
    }
    int n = uuids.size();
    int[] memory = new int[n];
    int[] cores = new int[n];
    int[] slots = new int[n];
    for (int i = 0; i < n; i++) {
      int[] a = init.getOrDefault(uuids.get(i), new int[3]);
      int[] b = app.getOrDefault(uuids.get(i), new int[3]);
      memory[i] = Math.max(a[0], b[0]);
      cores[i] = Math.max(a[1], b[1]);
      slots[i] = Math.max(Math.max(a[2], b[2]), 1);
    }
    return new PodUsage(grant, uuids.toArray(new String[0]), memory, cores, slots);
  }

  /** The same usage, charged to a queue. */
  PodUsage chargedTo(String queueName, long gpu, long cpu) {
    return new PodUsage(grant, uuids, memory, cores, slots, queueName, gpu, cpu);
  }

  /**
   * What the grant takes of cards, in hundredths of a card: per card the share of its memory, rounded
   * up and at most a whole card, which is a card portion's own hundredths for a KAI-style portion and 100
   * for a whole card. A card the snapshot does not know counts whole, so a charge never falls short.
   */
  long gpuHundredths(@Nullable NodeState node) {
    long sum = 0;
    for (int i = 0; i < uuids.length; i++) {
      int pos = node == null || !node.registered ? -1 : node.positionOf(uuids[i]);
      long total = pos < 0 ? 0 : node.totalMemoryMiB(pos);
      sum += total <= 0 ? 100 : Math.min(100, (memory[i] * 100L + total - 1) / total);
    }
    return sum;
  }

  /** The usage of one card, or {@code null} when the pod does not use it. */
  int[] of(String uuid) {
    for (int i = 0; i < uuids.length; i++) {
      if (uuids[i].equals(uuid)) {
        return new int[] {memory[i], cores[i], slots[i]};
      }
    }
    return null;
  }
}
