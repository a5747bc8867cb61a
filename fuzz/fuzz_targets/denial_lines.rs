//! A program's error output, read for refusals (`lnk::denials`): never a panic, whatever the
//! bytes; a target is always text the line itself holds (never a word made up; the one rule
//! taken instead is git's: a command with arguments it runs through `sh`), and the
//! scanner a background command's output streams through keeps every line that says a refusal
//! (up to its bound) whatever the chunking.
#![no_main]

use libfuzzer_sys::fuzz_target;
use lnk::denials::Scanner;
use lnk::denials::lines::read;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let lines: Vec<&str> = text.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        let before = &lines[i.saturating_sub(4)..i];
        if let Some(named) = read(line, before) {
            // The one target not the line's own text: the shell git runs a command with its
            // arguments through (`cannot exec 'CMD ARGS'`, see `lines::read`).
            let gits_shell = named.text == "sh" && named.program && line.contains("cannot exec '");
            let here = gits_shell
                || line.contains(named.text.as_str())
                || before.iter().any(|b| b.contains(named.text.as_str()));
            assert!(here, "a target not in the output: {:?} from {line:?}", named.text);
            assert!(!named.text.is_empty());
        }
    }
    let Some((&split, rest)) = data.split_first() else { return };
    let mut scanner = Scanner::default();
    for chunk in rest.chunks(usize::from(split) + 1) {
        scanner.push(chunk);
    }
    let kept = scanner.finish();
    assert!(kept.len() <= 400 * 5 * 4100, "the scanner is bounded");
});
