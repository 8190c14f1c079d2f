package io.vgpu.core.policy;

import io.vgpu.api.spi.CardDemand;
import io.vgpu.api.spi.NodeView;
import io.vgpu.api.spi.PlacementView;
import java.util.List;

/**
 * Hand-built nodes and placements for the policy tests: every card has 16,000 MiB and 100 compute
 * units, and a share of {@code m} milli uses {@code 16 m} MiB and {@code m / 10} units, so "free
 * milli" reads directly off the numbers in a test.
 */
final class Cards {
  static final int MIB_PER_MILLI = 16;

  private Cards() {}

  /** A node whose cards have the given free shares, in milli; {@code freeCpu} -1 means CPU not modelled. */
  static NodeView node(String name, String type, long freeCpu, int... freeMilli) {
    return new NodeView() {
      @Override
      public String name() {
        return name;
      }

      @Override
      public int deviceCount() {
        return freeMilli.length;
      }

      @Override
      public String uuid(int d) {
        return name + "-" + d;
      }

      @Override
      public int index(int d) {
        return d;
      }

      @Override
      public String type(int d) {
        return type;
      }

      @Override
      public int numa(int d) {
        return 0;
      }

      @Override
      public boolean schedulable(int d) {
        return true;
      }

      @Override
      public int totalMemoryMiB(int d) {
        return 1000 * MIB_PER_MILLI;
      }

      @Override
      public int usedMemoryMiB(int d) {
        return (1000 - freeMilli[d]) * MIB_PER_MILLI;
      }

      @Override
      public int totalCores(int d) {
        return 100;
      }

      @Override
      public int usedCores(int d) {
        return (1000 - freeMilli[d]) / 10;
      }

      @Override
      public int splitCount(int d) {
        return 10;
      }

      @Override
      public int sharers(int d) {
        return freeMilli[d] < 1000 ? 1 : 0;
      }

      @Override
      public long freeCpuMilli() {
        return freeCpu;
      }
    };
  }

  /** A node of type "T" with CPU not modelled. */
  static NodeView node(int... freeMilli) {
    return node("n", "T", -1, freeMilli);
  }

  /** What a task of {@code milli} per card on {@code count} cards asks of each card. */
  static CardDemand demand(int count, int milli) {
    return new CardDemand(count, milli * MIB_PER_MILLI, 0, milli / 10);
  }

  /** A class of tasks taking {@code milli} on {@code count} cards and {@code cpu} millicores. */
  static WorkloadClass task(long cpu, int count, int milli) {
    return WorkloadClass.of(cpu, demand(count, milli));
  }

  /** A pod taking {@code milli} on each of the given cards and {@code cpu} millicores. */
  static PlacementView placement(long cpu, int milli, int... cards) {
    return new PlacementView() {
      @Override
      public int containers() {
        return cards.length == 0 ? 0 : 1;
      }

      @Override
      public int cardCount(int c) {
        return cards.length;
      }

      @Override
      public int card(int c, int i) {
        return cards[i];
      }

      @Override
      public int memoryMiB(int c, int i) {
        return milli * MIB_PER_MILLI;
      }

      @Override
      public int cores(int c, int i) {
        return milli / 10;
      }

      @Override
      public long cpuMilli() {
        return cpu;
      }
    };
  }

  /** A workload of the given classes and weights. */
  static TargetWorkload workload(List<WorkloadClass> classes, Double... weights) {
    return TargetWorkload.of(classes, List.of(weights));
  }

  /** The order a policy tries the node's cards in. */
  static int[] order(io.vgpu.api.spi.PlacementPolicy policy, NodeView node, CardDemand demand) {
    int[] order = new int[node.deviceCount()];
    policy.rankCards(node, demand, order);
    return order;
  }
}
