package io.vgpu.core;

import io.vgpu.api.ScoringWeights;
import io.vgpu.api.spi.CardDemand;
import io.vgpu.api.spi.NodeView;
import io.vgpu.api.spi.PlacementPolicy;
import io.vgpu.api.spi.PlacementView;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;

/**
 * HAMi's two-level policy: a node policy ({@code binpack} prefers the most used node, {@code spread}
 * the least used) and a device policy that orders a node's cards ({@code spread}, {@code binpack},
 * {@code mutex}, or a comma chain of {@code binpack}, {@code spread} and {@code numa} keys).
 *
 * <p>HAMi sorts cards with its comparator and tries them from the end of the sorted list; this
 * policy returns that trial order directly. Where HAMi leaves ties to an unstable sort, cards tie-break
 * by lowest index, so placements are reproducible.
 */
final class HamiPolicy implements PlacementPolicy {
  /** A key of a comma chain. */
  enum Key {
    BINPACK,
    SPREAD,
    NUMA
  }

  private static final int SINGLE_SPREAD = 0;
  private static final int SINGLE_BINPACK = 1;
  private static final int SINGLE_MUTEX = 2;

  private static final ThreadLocal<float[]> SCORES = ThreadLocal.withInitial(() -> new float[16]);

  private final Settings settings;
  private final boolean nodeSpread;
  private final boolean chain;
  private final Key[] chainKeys;
  private final int single;
  private final boolean numaBind;
  private final ScoringWeights weights;
  private final boolean defaultWeights;

  /**
   * What a HAMi policy is once its names are read, and all that decides how it places: two requests
   * with equal settings place alike, however their annotations spelled the names. A finite set but
   * for the weights.
   *
   * @param nodeSpread whether nodes are spread ({@code spread}) rather than packed (any other value)
   * @param single the single device policy: spread, binpack or mutex; spread when {@code chain} is set
   * @param chain the keys of a comma chain (or a bare {@code numa}), in order, each once; empty when
   *     the device policy is a single one
   * @param numaBind whether all cards of a container must share a NUMA node
   * @param weights the device-score weights
   */
  record Settings(boolean nodeSpread, int single, List<Key> chain, boolean numaBind, ScoringWeights weights) {
    Settings {
      chain = List.copyOf(chain);
    }
  }

  /**
   * Reads policy names as HAMi does: the node policy is {@code spread} or else binpack; the device
   * policy is a comma chain of {@code binpack}, {@code spread} and {@code numa} (unknown keys ignored,
   * spread when none is left), or exactly {@code binpack} or {@code mutex}, or else spread.
   */
  static Settings settings(String nodePolicy, String devicePolicy, ScoringWeights weights, boolean numaBind) {
    String device = devicePolicy.trim();
    boolean chain = device.contains(",") || device.equals("numa");
    int single =
        chain
            ? SINGLE_SPREAD
            : switch (device) {
              case "binpack" -> SINGLE_BINPACK;
              case "mutex" -> SINGLE_MUTEX;
              default -> SINGLE_SPREAD;
            };
    return new Settings("spread".equals(nodePolicy.trim()), single, chain ? List.of(chainKeys(device, numaBind)) : List.of(), numaBind, weights);
  }

  HamiPolicy(String nodePolicy, String devicePolicy, ScoringWeights weights, boolean numaBind) {
    this(settings(nodePolicy, devicePolicy, weights, numaBind));
  }

  HamiPolicy(Settings settings) {
    this.settings = settings;
    this.nodeSpread = settings.nodeSpread();
    this.weights = settings.weights();
    this.defaultWeights = weights.equals(ScoringWeights.DEFAULT);
    this.numaBind = settings.numaBind();
    this.chain = !settings.chain().isEmpty();
    this.chainKeys = settings.chain().toArray(new Key[0]);
    this.single = settings.single();
  }

  /** Whether the device policy's comma list names {@code token}, as HAMi's policy membership test. */
  static boolean mentions(String devicePolicy, String token) {
    for (String part : devicePolicy.split(",")) {
      if (part.trim().equals(token)) {
        return true;
      }
    }
    return false;
  }

  private static Key[] chainKeys(String policy, boolean numaBind) {
    List<Key> keys = new ArrayList<>();
    for (String part : policy.split(",")) {
      Key key =
          switch (part.trim().toLowerCase(Locale.ROOT)) {
            case "binpack" -> Key.BINPACK;
            case "spread" -> Key.SPREAD;
            case "numa" -> Key.NUMA;
            default -> null;
          };
      if (key != null && !keys.contains(key)) {
        keys.add(key);
      }
    }
    if (keys.isEmpty()) {
      keys.add(Key.SPREAD);
    }
    if (numaBind && keys.get(0) != Key.NUMA) {
      keys.remove(Key.NUMA);
      keys.add(0, Key.NUMA);
    }
    return keys.toArray(new Key[0]);
  }

  @Override
  public String name() {
    String device;
    if (chain) {
      StringBuilder keys = new StringBuilder();
      for (Key key : chainKeys) {
        keys.append(key.name().toLowerCase(Locale.ROOT)).append(',');
      }
      // A chain of one key sorts otherwise than the single policy of that name: the trailing comma says so.
      device = chainKeys.length == 1 && chainKeys[0] == Key.NUMA ? "numa" : keys.toString();
      if (chainKeys.length > 1) {
        device = device.substring(0, device.length() - 1);
      }
    } else {
      device = single == SINGLE_BINPACK ? "binpack" : single == SINGLE_MUTEX ? "mutex" : "spread";
    }
    return (nodeSpread ? "spread" : "binpack") + "/" + device;
  }

  /** What this policy is, as read from the names it was made from. */
  Settings settings() {
    return settings;
  }

  @Override
  public boolean scoresNodeUsageOnly() {
    return true;
  }

  @Override
  public double scoreNode(NodeView node, PlacementView placement) {
    float score = node instanceof NodeState state ? state.usageScore : usageScore(node);
    return nodeSpread ? -score : score;
  }

  /** HAMi's node score for any view (the engine's own snapshots carry it precomputed). */
  static float usageScore(NodeView node) {
    int used = 0;
    int usedCores = 0;
    int usedMem = 0;
    int total = 0;
    int totalCores = 0;
    int totalMem = 0;
    for (int d = 0; d < node.deviceCount(); d++) {
      used += node.sharers(d);
      usedCores += node.usedCores(d);
      usedMem += node.usedMemoryMiB(d);
      total += node.splitCount(d);
      totalCores += node.totalCores(d);
      totalMem += node.totalMemoryMiB(d);
    }
    if (total == 0 || totalCores == 0 || totalMem == 0) {
      return 0f;
    }
    return 10f
        * ((float) used / (float) total
            + (float) usedCores / (float) totalCores
            + (float) usedMem / (float) totalMem);
  }

  /**
   * HAMi's device score: 10 x weighted sum of the card's used shares of slots, compute and memory. The
   * request itself adds nothing, because HAMi compares the request's vendor word with the card's model
   * type, which never match for real registrations.
   */
  private float cardScore(NodeView node, int d) {
    int count = node.splitCount(d);
    int totalCores = node.totalCores(d);
    int totalMem = node.totalMemoryMiB(d);
    if (count == 0 || totalCores == 0 || totalMem == 0) {
      return 0f;
    }
    float used = (float) node.sharers(d) / (float) count;
    float core = (float) node.usedCores(d) / (float) totalCores;
    float mem = (float) node.usedMemoryMiB(d) / (float) totalMem;
    if (defaultWeights) {
      return 10f * (used + core + mem);
    }
    return 10f * ((float) weights.slot() * used + (float) weights.core() * core + (float) weights.memory() * mem);
  }

  @Override
  public void rankCards(NodeView node, CardDemand demand, int[] order) {
    int n = node.deviceCount();
    float[] scores = SCORES.get();
    if (scores.length < n) {
      scores = new float[Math.max(n, scores.length * 2)];
      SCORES.set(scores);
    }
    for (int d = 0; d < n; d++) {
      scores[d] = cardScore(node, d);
      order[d] = d;
    }
    // Insertion sort: n is a node's card count (8 or 16), and it is allocation-free.
    for (int i = 1; i < n; i++) {
      int current = order[i];
      int j = i - 1;
      while (j >= 0 && triedBefore(node, scores, current, order[j])) {
        order[j + 1] = order[j];
        j--;
      }
      order[j + 1] = current;
    }
  }

  /** Whether card {@code a} is tried before card {@code b}. */
  private boolean triedBefore(NodeView node, float[] scores, int a, int b) {
    // HAMi walks its sorted list from the end: a comes first when it sorts after b.
    if (less(node, scores, b, a)) {
      return true;
    }
    if (less(node, scores, a, b)) {
      return false;
    }
    return node.index(a) < node.index(b);
  }

  /** HAMi's sort comparator for its device list. */
  private boolean less(NodeView node, float[] scores, int i, int j) {
    if (chain) {
      for (Key key : chainKeys) {
        switch (key) {
          case BINPACK -> {
            if (scores[i] != scores[j]) {
              return scores[i] < scores[j];
            }
          }
          case SPREAD -> {
            if (scores[i] != scores[j]) {
              return scores[i] > scores[j];
            }
          }
          case NUMA -> {
            if (node.numa(i) != node.numa(j)) {
              return node.numa(i) < node.numa(j);
            }
          }
        }
      }
      return node.index(i) < node.index(j);
    }
    float si = scores[i];
    float sj = scores[j];
    int ni = node.numa(i);
    int nj = node.numa(j);
    if (single == SINGLE_MUTEX) {
      int ui = node.sharers(i);
      int uj = node.sharers(j);
      if (ui != uj) {
        return ui > uj;
      }
      return ni < nj;
    }
    boolean binpack = single == SINGLE_BINPACK;
    if (numaBind) {
      if (binpack) {
        return ni == nj ? si < sj : ni > nj;
      }
      return ni == nj ? si > sj : ni < nj;
    }
    if (binpack) {
      return si != sj ? si < sj : ni < nj;
    }
    return si != sj ? si > sj : ni < nj;
  }
}
