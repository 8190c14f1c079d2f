package io.vgpu.examples;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

class QueueDivisionExampleTest {
  /**
   * The expected shares, worked by hand with KAI v0.17's rules (ResourceDivision's Javadoc, kai.md §4.2):
   *
   * <p>Top level, 16 GPUs. Deserved: research min(8, 10 + 7 = 17) = 8; inference's request 5 is capped
   * by its limit to 4, min(2, 4) = 2. Left 16 - 10 = 6. Over quota, priority 200 first: inference alone,
   * weight (1/1) + k·(1/1) = 2 of a sum of 2, offered 6, wants 4 - 2 = 2 <= 6 so takes 2 (4, at its
   * limit); it took less than its offer, so a new round, where nobody in its level wants more. Left 4 to
   * priority 100: research alone, offered 4, wants 17 - 8 = 9 > 4 so takes floor(4) = 4: 12.
   *
   * <p>Inside research, its 12. Deserved: vision min(4, 10) = 4, language min(1, min(6, 7)) = 1. Left 7.
   * One level; weights 3 and 1 normalise to 0.75 and 0.25, so 1.5 and 0.5 of a sum of 2: offers 7 × 0.75
   * = 5.25 and 7 × 0.25 = 1.75. Vision wants 6 > 5.25, takes 5 (remainder 0.25); language wants 5 > 1.75,
   * takes 1 (remainder 0.75). Nobody took less than its offer, so no second round; the one GPU left goes
   * to the largest remainder, language. Vision 4 + 5 = 9, language 1 + 1 + 1 = 3; 9 + 3 = 12.
   */
  @Test
  void printsKaisDivisionOfSixteenGpus() {
    String printed = run();
    assertThat(printed).startsWith("16 GPUs divided among 4 queues");
    Map<String, List<String>> rows = rows(printed);
    assertThat(rows.keySet()).containsExactly("queue", "research", "vision", "language", "inference");
    assertThat(rows.get("queue")).containsExactly("deserved", "requested", "allocated", "fairShare", "maxAllowed");
    assertThat(rows.get("research")).containsExactly("8", "17", "9", "12", "unlimited");
    assertThat(rows.get("vision")).containsExactly("4", "10", "6", "9", "unlimited");
    assertThat(rows.get("language")).containsExactly("1", "6", "3", "3", "6");
    assertThat(rows.get("inference")).containsExactly("2", "4", "4", "4", "4");
  }

  @Test
  void teamsAreIndentedUnderTheirDepartment() {
    assertThat(run()).contains("\n  vision ").contains("\n  language ").contains("\nresearch ").contains("\ninference ");
  }

  private static String run() {
    PrintStream original = System.out;
    ByteArrayOutputStream out = new ByteArrayOutputStream();
    System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
    try {
      QueueDivisionExample.main(new String[0]);
    } finally {
      System.setOut(original);
    }
    return out.toString(StandardCharsets.UTF_8);
  }

  /** The table's rows by their first column, after the title line. */
  private static Map<String, List<String>> rows(String printed) {
    Map<String, List<String>> rows = new LinkedHashMap<>();
    List<String> lines = printed.lines().skip(1).toList();
    for (String line : lines) {
      List<String> cells = List.of(line.trim().split("\\s+"));
      rows.put(cells.get(0), cells.subList(1, cells.size()));
    }
    return rows;
  }
}
