package io.vgpu.core.policy;

import java.util.HashMap;
import java.util.HashSet;
import java.util.Locale;
import java.util.Map;
import java.util.Set;

/**
 * How much of each card type's capacity the type-constrained part of a workload will need: for type X,
 * the share of all card demand that only some types can serve, spread over those types in proportion
 * to their capacity and directed at X, divided by X's share of the cluster's cards, capped at 1. A
 * contention of 1 means tasks that must run on X will want every X card; 0 means nothing insists on X.
 *
 * <p>Immutable; built once per fixed workload.
 */
final class TypeContention {
  static final TypeContention NONE = new TypeContention(Map.of());

  private final Map<String, Double> byType;

  private TypeContention(Map<String, Double> byType) {
    this.byType = Map.copyOf(byType);
  }

  /**
   * The contention of each type under {@code workload} on a cluster with {@code cardsByType} cards of
   * each type (type names compared case-insensitively).
   */
  static TypeContention of(TargetWorkload workload, Map<String, Long> cardsByType) {
    Map<String, Long> capacity = new HashMap<>();
    long allCards = 0;
    for (Map.Entry<String, Long> e : cardsByType.entrySet()) {
      if (e.getValue() > 0) {
        capacity.merge(key(e.getKey()), e.getValue(), Long::sum);
        allCards += e.getValue();
      }
    }
    double allDemand = 0;
    Map<String, Double> directed = new HashMap<>();
    for (int c = 0; c < workload.size; c++) {
      double demand = workload.weight[c] * workload.cards[c] * workload.cardShare[c];
      allDemand += demand;
      Set<String> accepted = new HashSet<>();
      for (String type : workload.classes().get(c).cardTypes()) {
        accepted.add(key(type));
      }
      if (accepted.isEmpty() || demand == 0) {
        continue;
      }
      long acceptedCards = 0;
      for (String type : accepted) {
        acceptedCards += capacity.getOrDefault(type, 0L);
      }
      for (String type : accepted) {
        long cards = capacity.getOrDefault(type, 0L);
        if (cards > 0) {
          directed.merge(type, demand * cards / acceptedCards, Double::sum);
        }
      }
    }
    if (allDemand == 0 || allCards == 0) {
      return NONE;
    }
    Map<String, Double> byType = new HashMap<>();
    for (Map.Entry<String, Double> e : directed.entrySet()) {
      double demandShare = e.getValue() / allDemand;
      double capacityShare = (double) capacity.get(e.getKey()) / allCards;
      byType.put(e.getKey(), Math.min(1.0, demandShare / capacityShare));
    }
    // Also under the cluster's own spellings, so that lookups by a card's type do not allocate.
    for (String type : cardsByType.keySet()) {
      Double value = byType.get(key(type));
      if (value != null) {
        byType.put(type, value);
      }
    }
    return new TypeContention(byType);
  }

  /** The contention of a card type, 0 when nothing insists on it. */
  double of(String type) {
    if (byType.isEmpty()) {
      return 0;
    }
    Double exact = byType.get(type);
    return exact != null ? exact : byType.getOrDefault(key(type), 0.0);
  }

  private static String key(String type) {
    return type.toLowerCase(Locale.ROOT);
  }
}
