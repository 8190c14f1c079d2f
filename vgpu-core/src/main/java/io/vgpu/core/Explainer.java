package io.vgpu.core;

import io.vgpu.api.ContainerGrant;
import io.vgpu.api.DeviceGrant;
import io.vgpu.api.FitReason;
import io.vgpu.api.PodGrant;
import io.vgpu.api.PodRef;
import io.vgpu.api.spi.CardDemand;
import io.vgpu.core.Explanation.CardExplanation;
import io.vgpu.core.Explanation.NearestFix;
import io.vgpu.core.Explanation.NodeExplanation;
import io.vgpu.core.Explanation.Shortfall;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Optional;
import java.util.stream.Collectors;
import org.jspecify.annotations.Nullable;

/**
 * Works out {@link Explanation}s. On each node the pod is fitted as the filter fits it; for the first
 * container that does not fit, every card is judged against that container with every check (not only
 * the first that fails), and the shortfalls are priced: a card's cost is the sum over memory, compute
 * and sharing slots of what it lacks divided by what it has. A node's cost is the sum of its cheapest
 * cards, as many as the container needs; the nearest fix is the cheapest node.
 */
final class Explainer {
  private final Engine engine;
  private final QuotaLedger.@Nullable QuotaCheck quota;
  private final PodFitter fitter;

  Explainer(Engine engine, QuotaLedger.@Nullable QuotaCheck quota, PodFitter fitter) {
    this.engine = engine;
    this.quota = quota;
    this.fitter = fitter;
  }

  private record Priced(NodeExplanation explanation, double cost, List<Integer> cards, String change) {}

  Explanation explain(CompiledRequest request, List<String> names, List<@Nullable NodeState> states) {
    List<NodeExplanation> nodes = new ArrayList<>();
    Priced nearest = null;
    for (int i = 0; i < names.size(); i++) {
      NodeState state = states.get(i);
      if (state == null) {
        nodes.add(new NodeExplanation(names.get(i), false, List.of(), NodeRejection.unregistered(names.get(i)), List.of()));
        continue;
      }
      Priced priced = explainNode(request, state);
      nodes.add(priced.explanation);
      if (!priced.explanation.fits()
          && Double.isFinite(priced.cost)
          && (nearest == null || priced.cost < nearest.cost)) {
        nearest = priced;
      }
    }
    boolean fitsSomewhere = nodes.stream().anyMatch(NodeExplanation::fits);
    Optional<NearestFix> fix = Optional.empty();
    if (!fitsSomewhere && nearest != null) {
      List<String> uuids = new ArrayList<>();
      for (int card : nearest.cards) {
        uuids.add(nearest.explanation.cards().get(card).uuid());
      }
      fix = Optional.of(new NearestFix(nearest.explanation.node(), uuids, nearest.change, nearest.cost));
    }
    return new Explanation(request.request.pod(), nodes, fix);
  }

  private Priced explainNode(CompiledRequest request, NodeState node) {
    if (fitter.fit(node, request, quota)) {
      List<DeviceGrant> chosen = new ArrayList<>();
      PodGrant grant = fitter.grant(request, engine.config().schema().vendor());
      for (ContainerGrant c : grant.allContainers()) {
        chosen.addAll(c.devices());
      }
      return new Priced(new NodeExplanation(node.name, true, chosen, null, List.of()), 0, List.of(), "");
    }
    NodeRejection rejection = fitter.rejection();
    CardDemand demand = fitter.failedDemand;
    int n = node.deviceCount;
    List<CardExplanation> cards = new ArrayList<>(n);
    double[] costs = new double[n];
    for (int d = 0; d < n; d++) {
      CardVerdict verdict = judge(request, node, d, demand);
      cards.add(new CardExplanation(node.uuids[d], verdict.reasons, verdict.shortBy, node.holders(node.uuids[d])));
      costs[d] = verdict.cost;
    }
    NodeExplanation explanation = new NodeExplanation(node.name, false, List.of(), rejection, cards);
    if (demand == null || demand.count() > n) {
      return new Priced(explanation, Double.POSITIVE_INFINITY, List.of(), "");
    }
    Integer[] byCost = new Integer[n];
    for (int d = 0; d < n; d++) {
      byCost[d] = d;
    }
    Arrays.sort(byCost, (a, b) -> costs[a] != costs[b] ? Double.compare(costs[a], costs[b]) : Integer.compare(node.index(a), node.index(b)));
    double total = 0;
    List<Integer> chosen = new ArrayList<>();
    for (int i = 0; i < demand.count(); i++) {
      total += costs[byCost[i]];
      chosen.add(byCost[i]);
    }
    if (!Double.isFinite(total)) {
      return new Priced(explanation, Double.POSITIVE_INFINITY, List.of(), "");
    }
    return new Priced(explanation, total, chosen, describe(node, cards, chosen, demand));
  }

  private record CardVerdict(List<FitReason> reasons, Shortfall shortBy, double cost) {}

  /** Every check of the fit rule applied to one card, not only the first that fails, with what the card lacks. */
  private CardVerdict judge(CompiledRequest req, NodeState node, int d, @Nullable CardDemand demand) {
    if (demand == null) {
      return new CardVerdict(List.of(), Shortfall.NONE, Double.POSITIVE_INFINITY);
    }
    int split = node.splitCount(d);
    int sharers = fitter.workingSharers(d);
    int usedMem = fitter.workingMemory(d);
    int usedCores = fitter.workingCores(d);
    int totalMem = node.totalMemoryMiB(d);
    int totalCores = node.totalCores(d);
    int mem = demand.memoryOn(totalMem);
    int cores = demand.cores();
    int refused =
        FitRule.refusals(req.constraints, node, d, node.flags(d), node.typeId(d), split, sharers, totalMem, usedMem, mem, totalCores, usedCores, cores);
    double quotaCost = 0;
    long[] over = quota == null ? null : quotaOver(d, mem, cores);
    if (over != null && (over[0] > 0 || over[1] > 0)) {
      refused |= FitRule.QUOTA;
      quotaCost = ratio(over[0], totalMem) + ratio(over[1], totalCores);
    }
    List<FitReason> reasons = FitRule.reasons(refused);
    boolean hard = (refused & FitRule.PERMANENT) != 0;
    int shortSharers = 0;
    if ((refused & FitRule.NO_SLOT) != 0) {
      shortSharers = sharers - split + 1;
    }
    if ((refused & (FitRule.MUTEX | FitRule.EXCLUSIVE)) != 0) {
      shortSharers = Math.max(shortSharers, sharers);
    }
    int shortMem = Math.max(0, mem - (totalMem - usedMem));
    int shortCores = Math.max(0, cores - (totalCores - usedCores));
    if ((refused & FitRule.NO_COMPUTE) != 0) {
      shortCores = Math.max(shortCores, 1);
    }
    Shortfall shortBy = new Shortfall(shortMem, shortCores, shortSharers);
    double cost =
        hard || (shortMem > 0 && mem > totalMem) || (shortCores > 0 && cores > totalCores)
            ? Double.POSITIVE_INFINITY
            : ratio(shortMem, totalMem) + ratio(shortCores, totalCores) + ratio(shortSharers, split) + quotaCost;
    return new CardVerdict(reasons, shortBy, cost);
  }

  private static double ratio(long shortfall, long capacity) {
    if (shortfall == 0) {
      return 0;
    }
    return capacity <= 0 ? Double.POSITIVE_INFINITY : (double) shortfall / capacity;
  }

  private String describe(NodeState node, List<CardExplanation> cards, List<Integer> chosen, CardDemand demand) {
    List<String> parts = new ArrayList<>();
    for (int card : chosen) {
      CardExplanation c = cards.get(card);
      Shortfall s = c.shortBy();
      List<String> amounts = new ArrayList<>();
      if (s.memoryMiB() > 0) {
        amounts.add(s.memoryMiB() + " MiB");
      }
      if (s.cores() > 0) {
        amounts.add(s.cores() + (s.cores() == 1 ? " core" : " cores"));
      }
      if (s.sharers() > 0) {
        amounts.add(s.sharers() + (s.sharers() == 1 ? " sharing slot" : " sharing slots"));
      }
      if (!amounts.isEmpty()) {
        String held = c.heldBy().isEmpty() ? "" : " (held by " + c.heldBy().stream().map(PodRef::toString).collect(Collectors.joining(", ")) + ")";
        parts.add("free " + String.join(" and ", amounts) + " on " + c.uuid() + held);
      }
      if (c.reasons().contains(FitReason.RESOURCE_QUOTA_NOT_FIT) && quota != null) {
        String q = quotaChange(demand, card, node.totalMemoryMiB(card));
        if (!q.isEmpty() && !parts.contains(q)) {
          parts.add(q);
        }
      }
    }
    return parts.isEmpty() ? "no change to device capacity found; check NUMA binding and the pod's other containers" : String.join("; ", parts);
  }

  /**
   * By how much (MiB, cores) the namespace's quota would be exceeded if the container that did not fit
   * took its share of card {@code card}: each 0 or more.
   */
  private long[] quotaOver(int card, int mem, int cores) {
    QuotaLedger.QuotaCheck q = quota;
    long[] pod = fitter.failedPodTotalWith(card, mem, cores);
    long memOver = q.memoryLimit() < 0 ? 0 : q.usedMemory() + pod[0] - q.memoryLimit();
    long coreOver = q.coreLimit() < 0 ? 0 : q.usedCores() + pod[1] - q.coreLimit();
    return new long[] {Math.max(0, memOver), Math.max(0, coreOver)};
  }

  private String quotaChange(CardDemand demand, int card, int totalMem) {
    long[] over = quotaOver(card, demand.memoryOn(totalMem), demand.cores());
    List<String> amounts = new ArrayList<>();
    if (over[0] > 0) {
      amounts.add(over[0] + " MiB");
    }
    if (over[1] > 0) {
      amounts.add(over[1] + " cores");
    }
    if (amounts.isEmpty()) {
      return "";
    }
    return "free " + String.join(" and ", amounts) + " of namespace " + quota.namespace() + "'s quota (or raise it)";
  }
}
