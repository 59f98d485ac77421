//! Persian text comes out in the right order: the visual pieces of the four reference
//! sentences of the design notes, and (with the console) a rendering of them compared with
//! a committed snapshot.

use intentdesk::i18n::bidi::{Direction, Piece, visual_runs};

const APPROVED: &str = "درخواست خرید تأیید شده";
const ORDER: &str = "سفارش PO-1234 برای ۱۲۰۰ واحد";
const DATE: &str = "۱۴۰۵/۰۹/۰۹";
const PENDING: &str = "وضعیت: «در انتظار» (۳ مورد) می‌شود";
const PARAGRAPH: &str =
    "این یک متن طولانی فارسی است که باید در چند خط شکسته شود تا ببینیم ترتیب خطوط درست است";

fn texts(pieces: &[Piece]) -> Vec<&str> {
    pieces.iter().map(|p| p.text.as_str()).collect()
}

/// What the reader sees once the shaper has reversed the pieces it lays out right to left.
fn as_seen(pieces: &[Piece]) -> Vec<String> {
    pieces
        .iter()
        .map(|p| {
            if p.arabic {
                p.text.chars().rev().collect()
            } else {
                p.text.clone()
            }
        })
        .collect()
}

#[test]
fn persian_words_are_placed_right_to_left() {
    let pieces = visual_runs(APPROVED, Direction::Rtl);
    assert_eq!(
        texts(&pieces),
        ["شده", " ", "تأیید", " ", "خرید", " ", "درخواست"]
    );
    assert!(pieces.iter().all(|p| p.rtl));
    assert!(pieces.iter().step_by(2).all(|p| p.arabic));
}

#[test]
fn an_order_id_stays_one_left_to_right_piece_and_digits_read_1200() {
    let pieces = visual_runs(ORDER, Direction::Rtl);
    assert_eq!(
        texts(&pieces),
        [
            "واحد",
            " ",
            "۰۰۲۱",
            " ",
            "برای",
            " ",
            "PO-1234",
            " ",
            "سفارش"
        ]
    );
    let id = &pieces[6];
    assert!(!id.rtl && !id.arabic, "{id:?}");
    assert_eq!(&ORDER[id.logical.clone()], "PO-1234");
    let digits = &pieces[2];
    assert!(!digits.rtl && digits.arabic, "{digits:?}");
    assert_eq!(as_seen(&pieces)[2], "۱۲۰۰");
}

#[test]
fn a_solar_hijri_date_reads_year_month_day_from_the_left() {
    let pieces = visual_runs(DATE, Direction::Rtl);
    assert_eq!(texts(&pieces), ["۵۰۴۱", "/", "۹۰", "/", "۹۰"]);
    assert_eq!(as_seen(&pieces).concat(), DATE);
}

#[test]
fn quotes_and_parentheses_are_mirrored_around_their_words() {
    let pieces = visual_runs(PENDING, Direction::Rtl);
    assert_eq!(
        texts(&pieces),
        [
            "می‌شود",
            " (",
            "مورد",
            " ",
            "۳",
            ") «",
            "انتظار",
            " ",
            "در",
            "» :",
            "وضعیت"
        ]
    );
    // Read glyph by glyph from the right: the sentence in logical order, with the opening
    // quote and parenthesis drawn as their mirror images.
    let from_the_right: String = as_seen(&pieces).concat().chars().rev().collect();
    assert_eq!(from_the_right, "وضعیت: »در انتظار« )۳ مورد( می‌شود");
}

#[test]
fn the_same_sentences_stay_in_logical_order_with_an_english_base() {
    let pieces = visual_runs(ORDER, Direction::Ltr);
    assert_eq!(
        texts(&pieces),
        ["سفارش", " PO-1234 ", "واحد", " ", "۰۰۲۱", " ", "برای"]
    );
}

#[test]
fn every_piece_points_back_at_its_logical_text() {
    for sentence in [APPROVED, ORDER, DATE, PENDING, PARAGRAPH] {
        let mut covered: Vec<_> = visual_runs(sentence, Direction::Rtl)
            .into_iter()
            .map(|p| p.logical)
            .collect();
        covered.sort_by_key(|r| r.start);
        let joined: String = covered.iter().map(|r| &sentence[r.clone()]).collect();
        assert_eq!(joined, sentence);
    }
}

#[cfg(feature = "console")]
mod rendering {
    //! Drawn through egui with Vazirmatn; compare `tests/snapshots/*.png` with the pango
    //! renderings in the design notes when they change.

    use egui::{Key, vec2};
    use egui_kittest::Harness;
    use egui_kittest::kittest::Queryable;
    use intentdesk::console::text::{
        BidiEditState, BidiLabel, BidiTextEdit, install_fonts, rtl_label,
    };

    use super::*;

    #[test]
    fn reference_lines_render_like_the_reference() {
        let mut harness = Harness::builder()
            .with_size(vec2(460.0, 330.0))
            .with_theme(egui::Theme::Light)
            .with_context_setup(install_fonts)
            .build_ui(|ui| {
                let black = egui::Color32::BLACK;
                for line in [APPROVED, ORDER, DATE, PENDING] {
                    let font = egui::FontId::proportional(24.0);
                    ui.add(BidiLabel::new(line, Direction::Rtl).font(font).color(black));
                    ui.add_space(12.0);
                }
                ui.separator();
                // About as wide as the wrapped reference rendering.
                ui.allocate_ui(vec2(392.0, 80.0), |ui| {
                    let font = egui::FontId::proportional(17.0);
                    ui.add(
                        BidiLabel::new(PARAGRAPH, Direction::Rtl)
                            .font(font)
                            .color(black)
                            .wrap(),
                    );
                });
            });
        harness.run();
        harness.snapshot("persian_reference_lines");
    }

    #[test]
    fn a_label_is_found_by_its_logical_text() {
        let harness = Harness::builder()
            .with_context_setup(install_fonts)
            .build_ui(|ui| {
                rtl_label(ui, ORDER, Direction::Rtl);
            });
        harness.get_by_label(ORDER);
    }

    #[test]
    fn widgets_of_mixed_text_are_labelled_in_logical_order() {
        use egui::accesskit::Role;
        use egui_kittest::kittest::NodeT;
        use intentdesk::console::views::format;
        use intentdesk::domain::Locale;
        use intentdesk::i18n::Localizer;

        let i18n = Localizer::new(Locale::FaIr);
        let harness = Harness::builder()
            .with_context_setup(install_fonts)
            .build_ui(move |ui| {
                // What is drawn holds the pieces in visual order, not the sentence.
                assert_ne!(format::wt(&i18n, ui, ORDER).text(), ORDER);
                format::button(ui, &i18n, ORDER);
                format::button_enabled(ui, &i18n, false, ORDER);
                let mut on = false;
                let shown = format::wt(&i18n, ui, ORDER);
                format::said(&i18n, ORDER, ui.checkbox(&mut on, shown));
                format::label(ui, &i18n, ORDER);
                format::label_colored(ui, &i18n, ORDER, egui::Color32::RED);
            });
        assert_eq!(
            harness
                .query_all_by_role_and_label(Role::Button, ORDER)
                .count(),
            2
        );
        harness.get_by_role_and_label(Role::CheckBox, ORDER);
        let labels: Vec<_> = harness
            .query_all_by_role(Role::Label)
            .map(|l| l.accesskit_node().value())
            .collect();
        assert_eq!(labels, vec![Some(ORDER.to_string()); 2]);
    }

    #[test]
    fn typing_in_a_persian_field_keeps_logical_order_and_right_moves_back() {
        let mut harness = Harness::builder()
            .with_size(vec2(300.0, 60.0))
            .with_context_setup(install_fonts)
            .build_ui_state(
                |ui, (state, text): &mut (BidiEditState, String)| {
                    BidiTextEdit::new(state, text, Direction::Rtl)
                        .hint("جست‌وجو")
                        .show(ui);
                },
                (BidiEditState::default(), String::new()),
            );
        harness
            .get_by_role(egui::accesskit::Role::TextInput)
            .focus();
        harness.run();
        harness
            .get_by_role(egui::accesskit::Role::TextInput)
            .type_text("سلام");
        harness.run();
        harness.key_press(Key::ArrowRight);
        harness.run();
        harness
            .get_by_role(egui::accesskit::Role::TextInput)
            .type_text("PO-1");
        harness.run();
        assert_eq!(harness.state().1, "سلاPO-1م");
        harness.key_press(Key::Home);
        harness.key_press(Key::Delete);
        harness.run();
        assert_eq!(harness.state().1, "لاPO-1م");
    }
}
