package io.vgpu.k8s.watchdog;

import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

/**
 * Decides, poll by poll, which containers are over their grant: NVML's total for a container on a
 * card above its grant plus the tolerance, without a break, for the grace period or longer. Only the
 * driver's figure counts; what the container's own interposer booked is never consulted, since a
 * hostile process can write it. An episode ends when the container is back within its grant or its
 * processes are gone from the card. Not thread-safe: one poller calls it.
 */
final class OverGrantJudge {
  /**
   * One container on one card in one poll.
   *
   * @param card the container and card
   * @param nvmlBytes the sum of what NVML charges to the container's processes on the card
   * @param grantBytes the container's grant on the card (0 when it has none there)
   * @param pids the container's processes on the card
   */
  record Usage(ContainerCard card, long nvmlBytes, long grantBytes, List<Integer> pids) {
    Usage {
      pids = List.copyOf(pids);
    }
  }

  /**
   * A container over its grant past the grace period.
   *
   * @param usage what this poll saw
   * @param overFor how long it has been over without a break
   * @param firstOfEpisode whether this is the first verdict of the episode (the one to report)
   */
  record Verdict(Usage usage, Duration overFor, boolean firstOfEpisode) {}

  private static final class Episode {
    final Instant since;
    boolean judged;

    Episode(Instant since) {
      this.since = since;
    }
  }

  private final long toleranceBytes;
  private final Duration grace;
  private final Map<ContainerCard, Episode> episodes = new HashMap<>();

  OverGrantJudge(long toleranceBytes, Duration grace) {
    this.toleranceBytes = toleranceBytes;
    this.grace = grace;
  }

  /** Whether {@code usage} is over its grant by more than the tolerance. */
  boolean over(Usage usage) {
    return usage.nvmlBytes() - usage.grantBytes() > toleranceBytes;
  }

  /**
   * Judges one poll taken at {@code now}: every container seen on a card, including those within
   * their grants (which ends their episodes).
   *
   * @return the containers over their grant for at least the grace period
   */
  List<Verdict> judge(Instant now, Collection<Usage> usages) {
    List<Verdict> out = new ArrayList<>();
    Set<ContainerCard> seen = new HashSet<>();
    for (Usage usage : usages) {
      seen.add(usage.card());
      if (!over(usage)) {
        episodes.remove(usage.card());
        continue;
      }
      Episode episode = episodes.computeIfAbsent(usage.card(), c -> new Episode(now));
      Duration overFor = Duration.between(episode.since, now);
      if (overFor.compareTo(grace) >= 0) {
        out.add(new Verdict(usage, overFor, !episode.judged));
        episode.judged = true;
      }
    }
    episodes.keySet().retainAll(seen);
    return out;
  }
}
