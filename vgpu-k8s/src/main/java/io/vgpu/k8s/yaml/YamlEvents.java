package io.vgpu.k8s.yaml;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import org.snakeyaml.engine.v2.api.LoadSettings;
import org.snakeyaml.engine.v2.common.Anchor;
import org.snakeyaml.engine.v2.events.AliasEvent;
import org.snakeyaml.engine.v2.events.Event;
import org.snakeyaml.engine.v2.events.NodeEvent;
import org.snakeyaml.engine.v2.events.ScalarEvent;
import org.snakeyaml.engine.v2.exceptions.MarkedYamlEngineException;
import org.snakeyaml.engine.v2.exceptions.YamlEngineException;
import org.snakeyaml.engine.v2.nodes.Tag;
import org.snakeyaml.engine.v2.parser.ParserImpl;
import org.snakeyaml.engine.v2.resolver.ScalarResolver;
import org.snakeyaml.engine.v2.scanner.StreamReader;

/**
 * Builds a {@link YamlNode} tree from snakeyaml-engine's parse events, so that anchors ({@code &a}),
 * aliases ({@code *a}) and merge keys ({@code <<: *a}, {@code <<: [*a, *b]}) are resolved — Jackson's
 * YAML parser reports scalar anchors to no one and merge keys as ordinary keys. An alias stands for the
 * anchored value itself, positions included, so an error in it points where the value was written (at its
 * anchor, which YAML counts as the start of the value). The
 * values a document stands for once its aliases are expanded are bounded, so that nested aliases
 * cannot blow a small file up into billions of values. Scalars are typed as Jackson types them (the
 * YAML JSON schema: a plain {@code 1} is an integer, {@code "1"} a string).
 */
final class YamlEvents {
  /** YAML's merge key. */
  private static final String MERGE_KEY = "<<";
  /** How many values a document may stand for once its aliases are expanded. */
  static final long MAX_EXPANDED_VALUES = 1_000_000;

  private static final LoadSettings SETTINGS = LoadSettings.builder().build();
  private static final ScalarResolver RESOLVER = SETTINGS.getSchema().getScalarResolver();

  /** A value and how many values it expands to. */
  private record Read(YamlNode node, long size) {}

  private final ParserImpl parser;
  private final String file;
  private final Map<String, Read> anchors = new HashMap<>();
  private long expanded;

  private YamlEvents(String text, String file) {
    this.parser = new ParserImpl(SETTINGS, new StreamReader(SETTINGS, text));
    this.file = file;
  }

  /**
   * Reads the one document of {@code text}.
   *
   * @throws InputException when it is empty, not well-formed, has more than one document or a bad alias
   */
  static YamlNode read(String text, String file) {
    try {
      return new YamlEvents(text, file).document();
    } catch (MarkedYamlEngineException e) {
      Position at = YamlReader.position(e.getProblemMark().isPresent() ? e.getProblemMark() : e.getContextMark(), file);
      throw new InputException(at, "not well-formed: " + YamlReader.firstLine(e.getProblem() != null ? e.getProblem() : e.getMessage(), e), e);
    } catch (YamlEngineException e) {
      throw new InputException(new Position(file, 1, 1), "not well-formed: " + YamlReader.firstLine(e.getMessage(), e), e);
    }
  }

  private YamlNode document() {
    expect(Event.ID.StreamStart);
    Event first = parser.next();
    if (first.getEventId() == Event.ID.StreamEnd) {
      throw new InputException(new Position(file, 1, 1), "the document is empty");
    }
    YamlNode root = value(parser.next()).node();
    expect(Event.ID.DocumentEnd);
    Event after = parser.next();
    if (after.getEventId() != Event.ID.StreamEnd) {
      throw new InputException(YamlReader.position(after.getStartMark(), file), "expected one document, found more content");
    }
    return root;
  }

  private void expect(Event.ID id) {
    Event e = parser.next();
    if (e.getEventId() != id) {
      throw new InputException(YamlReader.position(e.getStartMark(), file), "not well-formed: unexpected " + e.getEventId());
    }
  }

  private Read value(Event event) {
    Position at = YamlReader.position(event.getStartMark(), file);
    Read value =
        switch (event.getEventId()) {
          case Alias -> alias(((AliasEvent) event).getAlias(), at);
          case Scalar -> scalar((ScalarEvent) event, at);
          case SequenceStart -> sequence(at);
          case MappingStart -> mapping(at);
          default -> throw new InputException(at, "not well-formed: unexpected " + event.getEventId());
        };
    if (event instanceof NodeEvent node && !(event instanceof AliasEvent)) {
      node.getAnchor().ifPresent(anchor -> anchors.put(anchor.getValue(), value));
    }
    return value;
  }

  private Read scalar(ScalarEvent event, Position at) {
    count(1, at);
    YamlScalar.Kind kind = kind(event);
    return new Read(new YamlScalar(at, kind == YamlScalar.Kind.NULL ? "" : event.getValue(), kind), 1);
  }

  /** The scalar's kind as Jackson reads it: by explicit tag, else quoted is a string, else by the JSON schema. */
  private static YamlScalar.Kind kind(ScalarEvent event) {
    Optional<String> explicit = event.getTag().filter(t -> !t.equals("!"));
    Tag tag;
    if (explicit.isPresent()) {
      tag = new Tag(explicit.get());
    } else if (!event.isPlain()) {
      return YamlScalar.Kind.STRING;
    } else {
      tag = RESOLVER.resolve(event.getValue(), true);
    }
    if (tag.equals(Tag.INT)) {
      return YamlScalar.Kind.INTEGER;
    }
    if (tag.equals(Tag.FLOAT)) {
      return YamlScalar.Kind.DECIMAL;
    }
    if (tag.equals(Tag.BOOL)) {
      return YamlScalar.Kind.BOOLEAN;
    }
    if (tag.equals(Tag.NULL)) {
      return YamlScalar.Kind.NULL;
    }
    return YamlScalar.Kind.STRING;
  }

  private Read sequence(Position at) {
    List<YamlNode> items = new ArrayList<>();
    long size = 1;
    for (Event e = parser.next(); e.getEventId() != Event.ID.SequenceEnd; e = parser.next()) {
      Read item = value(e);
      items.add(item.node());
      size += item.size();
    }
    return new Read(new YamlList(at, items), size);
  }

  /**
   * A mapping. Keys written in it win over merged ones, and of the merged mappings an earlier one wins
   * over a later one; merged keys take the place of the {@code <<} entry.
   */
  private Read mapping(Position at) {
    // Each key, or each merge, in document order: a merge contributes the entries of its mappings.
    List<List<YamlMap.Entry>> slots = new ArrayList<>();
    Map<String, YamlMap.Entry> explicit = new HashMap<>();
    long size = 1;
    for (Event e = parser.next(); e.getEventId() != Event.ID.MappingEnd; e = parser.next()) {
      Position keyAt = YamlReader.position(e.getStartMark(), file);
      if (!(e instanceof ScalarEvent keyEvent)) {
        throw new InputException(keyAt, "a key must be a single value, not " + (e.getEventId() == Event.ID.Alias ? "an alias" : "a mapping or a list"));
      }
      String key = keyEvent.getValue();
      Read value = value(parser.next());
      size += value.size();
      if (key.equals(MERGE_KEY) && keyEvent.isPlain()) {
        List<YamlMap.Entry> merged = new ArrayList<>();
        mergedMappings(value.node()).forEach(m -> merged.addAll(m.entries().values()));
        slots.add(merged);
        continue;
      }
      YamlMap.Entry entry = new YamlMap.Entry(key, keyAt, value.node());
      if (explicit.put(key, entry) != null) {
        throw new InputException(keyAt, "duplicate key '" + key + "'");
      }
      slots.add(List.of(entry));
    }
    Map<String, YamlMap.Entry> entries = new LinkedHashMap<>();
    for (List<YamlMap.Entry> slot : slots) {
      for (YamlMap.Entry entry : slot) {
        if (explicit.get(entry.key()) == entry || !explicit.containsKey(entry.key())) {
          entries.putIfAbsent(entry.key(), entry);
        }
      }
    }
    return new Read(new YamlMap(at, entries), size);
  }

  private static List<YamlMap> mergedMappings(YamlNode value) {
    if (value instanceof YamlMap map) {
      return List.of(map);
    }
    if (value instanceof YamlList list) {
      List<YamlMap> maps = new ArrayList<>();
      for (YamlNode item : list.items()) {
        if (!(item instanceof YamlMap map)) {
          throw new InputException(item.position(), "'" + MERGE_KEY + "' merges a mapping or a list of mappings, got " + item.describe());
        }
        maps.add(map);
      }
      return maps;
    }
    throw new InputException(value.position(), "'" + MERGE_KEY + "' merges a mapping or a list of mappings, got " + value.describe());
  }

  /** The anchored value itself; an anchor is known once its value is complete, so aliases cannot recurse. */
  private Read alias(Anchor anchor, Position at) {
    Read target = anchors.get(anchor.getValue());
    if (target == null) {
      throw new InputException(at, "unknown alias '*" + anchor.getValue() + "'");
    }
    count(target.size(), at);
    return target;
  }

  private void count(long values, Position at) {
    expanded += values;
    if (expanded > MAX_EXPANDED_VALUES) {
      throw new InputException(at, "aliases expand the document beyond " + MAX_EXPANDED_VALUES + " values");
    }
  }
}
