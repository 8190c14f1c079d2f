package io.vgpu.examples.throughput;

import io.fabric8.kubernetes.api.model.Node;
import io.fabric8.kubernetes.api.model.Pod;
import io.vgpu.api.DeviceGrant;
import io.vgpu.api.PodRef;
import io.vgpu.api.SchedulableDevice;
import io.vgpu.k8s.codec.DeviceListCodec;
import io.vgpu.k8s.codec.HamiAnnotations;
import io.vgpu.k8s.codec.NodeRegisterCodec;
import io.vgpu.k8s.pod.PodRefs;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Whether a burst ended as it must, judged from the API objects alone (never from a component's memory):
 * every pod bound to the node its allocation names, with its handshake done ({@code bind-phase:
 * success}), and no card holding more than it has — memory, compute or sharing slots — counting every
 * pod that holds an allocation on it.
 *
 * @param placed the burst's pods bound with their handshake done
 * @param lost the burst's pods not placed, with why (first few)
 * @param lostCount how many were not placed
 * @param overbooked cards holding more than they have, with what (first few)
 * @param overbookedCount how many cards
 */
record PlacementAudit(int placed, List<String> lost, int lostCount, List<String> overbooked, int overbookedCount) {
  private static final int SHOWN = 5;

  /** Audits the pods of {@code burst} among {@code pods}, against the cards {@code nodes} register. */
  static PlacementAudit of(Set<PodRef> burst, List<Pod> pods, List<Node> nodes) {
    Map<String, SchedulableDevice> cards = new HashMap<>();
    for (Node node : nodes) {
      String register = node.getMetadata().getAnnotations() == null ? null : node.getMetadata().getAnnotations().get(HamiAnnotations.NODE_REGISTER);
      if (register != null) {
        NodeRegisterCodec.decode(register).forEach(d -> cards.put(d.uuid(), d));
      }
    }
    Map<String, long[]> used = new HashMap<>();
    int placed = 0;
    List<String> lost = new ArrayList<>();
    int lostCount = 0;
    Set<PodRef> seen = new java.util.HashSet<>();
    for (Pod pod : pods) {
      PodRef ref = PodRefs.of(pod);
      Map<String, String> a = PodRefs.annotations(pod);
      String node = pod.getSpec() == null ? null : pod.getSpec().getNodeName();
      String allocated = a.get(HamiAnnotations.DEVICES_ALLOCATED);
      if (node != null && !node.isEmpty() && allocated != null) {
        for (List<DeviceGrant> container : DeviceListCodec.decode(allocated)) {
          for (DeviceGrant d : container) {
            long[] u = used.computeIfAbsent(d.uuid(), k -> new long[3]);
            u[0] += d.memoryMiB();
            u[1] += d.cores();
            u[2]++;
          }
        }
      }
      if (!burst.contains(ref)) {
        continue;
      }
      seen.add(ref);
      String why = null;
      if (node == null || node.isEmpty()) {
        why = "not bound";
      } else if (!node.equals(a.get(HamiAnnotations.ASSIGNED_NODE))) {
        why = "bound to " + node + " but allocated on " + a.get(HamiAnnotations.ASSIGNED_NODE);
      } else if (!"success".equals(a.get(HamiAnnotations.BIND_PHASE))) {
        why = "bind-phase " + a.get(HamiAnnotations.BIND_PHASE);
      }
      if (why == null) {
        placed++;
      } else {
        lostCount++;
        if (lost.size() < SHOWN) {
          lost.add(ref + ": " + why);
        }
      }
    }
    for (PodRef ref : burst) {
      if (!seen.contains(ref)) {
        lostCount++;
        if (lost.size() < SHOWN) {
          lost.add(ref + ": missing");
        }
      }
    }
    List<String> overbooked = new ArrayList<>();
    int overbookedCount = 0;
    for (Map.Entry<String, long[]> e : used.entrySet()) {
      SchedulableDevice card = cards.get(e.getKey());
      long[] u = e.getValue();
      if (card == null || u[0] > card.memoryMiB() || u[1] > card.cores() || u[2] > card.splitCount()) {
        overbookedCount++;
        if (overbooked.size() < SHOWN) {
          overbooked.add(e.getKey() + ": " + u[0] + " MiB, " + u[1] + " cores, " + u[2] + " pods" + (card == null ? " on an unregistered card" : ""));
        }
      }
    }
    return new PlacementAudit(placed, List.copyOf(lost), lostCount, List.copyOf(overbooked), overbookedCount);
  }
}
