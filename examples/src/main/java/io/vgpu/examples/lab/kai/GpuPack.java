package io.vgpu.examples.lab.kai;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.function.Supplier;

/**
 * KAI's choice of GPU groups for a fraction on one node with the {@code gpupack} order (kai.md §1.3,
 * §1.5): the existing groups where the request fits by KAI's MiB rule ({@code floored − allocated −
 * request ≥ 0}), fullest first, then a new group — a fresh UUID — per idle card. A group is KAI's name
 * for one physical card its fraction pods share; which card is learned only from its reservation pod.
 */
public final class GpuPack {
  private GpuPack() {}

  /**
   * The node as KAI's scheduler sees it for sharing.
   *
   * @param flooredMiB the per-card MiB ({@link KaiPortion#flooredMiB}, or {@link KaiPortion#UNSYNCED_MIB})
   * @param idleCards cards neither held whole nor in a group
   * @param groupsMiB the MiB allocated in each existing group, in the order the groups were made
   */
  public record NodeCards(long flooredMiB, long idleCards, Map<String, Long> groupsMiB) {
    /** The view, the map copied in order. */
    public NodeCards {
      groupsMiB = java.util.Collections.unmodifiableMap(new LinkedHashMap<>(groupsMiB));
    }
  }

  /**
   * The groups for a fraction of {@code requestMiB} on each of {@code devices} cards; empty when the node
   * has too few.
   *
   * @param newGroup makes a new group's name
   */
  public static Optional<List<String>> choose(NodeCards node, long requestMiB, int devices, Supplier<String> newGroup) {
    List<Map.Entry<String, Long>> fitting = new ArrayList<>();
    for (Map.Entry<String, Long> g : node.groupsMiB().entrySet()) {
      if (node.flooredMiB() - g.getValue() - requestMiB >= 0) {
        fitting.add(g);
      }
    }
    fitting.sort(Comparator.comparingLong((Map.Entry<String, Long> g) -> g.getValue()).reversed()); // stable: ties keep the groups' order
    List<String> out = new ArrayList<>();
    for (Map.Entry<String, Long> g : fitting) {
      if (out.size() == devices) {
        break;
      }
      out.add(g.getKey());
    }
    if (requestMiB <= node.flooredMiB()) {
      for (long i = 0; i < node.idleCards() && out.size() < devices; i++) {
        out.add(newGroup.get());
      }
    }
    return out.size() == devices ? Optional.of(out) : Optional.empty();
  }
}
