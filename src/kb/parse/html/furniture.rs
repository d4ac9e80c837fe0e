//! Page furniture: what a page shows around its text (navigation, menus, permalinks,
//! language switchers), found by element, class, attribute or shape, never read as text.

use ego_tree::NodeRef;
use scraper::{ElementRef, Node};

use super::heading_level;

/// Elements whose content is never document text.
const SKIP: &[&str] = &[
    "script", "style", "noscript", "template", "nav", "head", "svg", "iframe", "object", "button",
    "form",
];
/// Classes of page furniture whose text is never document text: DocBook's navigation
/// header and footer (a page's own title, Prev / Up / Next), breadcrumbs, the permalink
/// after a heading or a definition (Sphinx's `headerlink` "¶"), and Sphinx's links
/// between an API entry and its source code ("[source]", "[docs]"), and a page's table of
/// contents (DocBook's and AsciiDoc's `toc`, Sphinx's `toctree-wrapper`): links to
/// headings whose text is read where they stand, which as chunks of their own matched
/// every question that named a chapter and were quoted as lists of links; and Bootstrap's
/// hidden dropdown menus (HAProxy's manual has one after each keyword it mentions, "This
/// keyword is available in sections : …", glued into the sentence).
const SKIP_CLASSES: &[&str] = &[
    "dropdown-menu",
    "navheader",
    "navfooter",
    "breadcrumb",
    "breadcrumbs",
    "headerlink",
    "anchorjs-link",
    "heading-anchor",
    "viewcode-link",
    "viewcode-back",
    "toc",
    "toctree-wrapper",
];

/// What a permalink shows when it has no class to tell it by.
const PERMALINK_GLYPHS: &[&str] = &["¶", "§", "#", "🔗", "⚓"];

/// Whether an element is page furniture (`SKIP`, `SKIP_CLASSES`, navigation), or a link
/// whose whole text is a permalink glyph.
pub(super) fn is_furniture(node: NodeRef<'_, Node>) -> bool {
    let Some(e) = node.value().as_element() else {
        return false;
    };
    SKIP.contains(&e.name())
        || e.attr("role") == Some("navigation")
        || e.classes().any(|c| SKIP_CLASSES.contains(&c))
        || is_language_switcher(node)
        || (e.name() == "a"
            && ElementRef::wrap(node)
                .is_some_and(|a| PERMALINK_GLYPHS.contains(&a.text().collect::<String>().trim())))
}

/// Whether `node` is a paragraph or list that links to the page in other languages (two
/// links with `hreflang` or more): "Available Languages: de | en | fr | ja | ko | tr" atop
/// every page of Apache's manual, each page's set a little different.
fn is_language_switcher(node: NodeRef<'_, Node>) -> bool {
    let Some(el) = ElementRef::wrap(node).filter(|e| matches!(e.value().name(), "p" | "ul" | "ol"))
    else {
        return false;
    };
    el.descendants()
        .filter_map(ElementRef::wrap)
        .filter(|a| a.value().name() == "a" && a.value().attr("hreflang").is_some())
        .nth(1)
        .is_some()
}

/// Links from which a block of nothing but links, before a page's first heading, is the
/// site's menu.
const MENU_LINKS: usize = 3;

/// Whether `block` (a list, paragraph or division) is a menu or a trail: at least
/// `MENU_LINKS` links, and no letter or digit outside them ("Modules | Directives | FAQ",
/// "Apache > HTTP Server > Documentation", a list of links). Before the first heading of a
/// page that has one, such a block is the site's navigation (atop every page of SQLite's
/// and Apache's manuals, under classes and ids no rule names), not the page's text:
/// repeated in each page's first chunk, it made those chunks alike and pulled questions
/// towards them.
pub(super) fn is_menu(block: NodeRef<'_, Node>) -> bool {
    let Some(el) = ElementRef::wrap(block) else {
        return false;
    };
    let links: Vec<ElementRef<'_>> = el
        .descendants()
        .filter_map(ElementRef::wrap)
        .filter(|e| e.value().name() == "a")
        .collect();
    // A block that holds a heading holds the page's start, however linked its text.
    let heading = el
        .descendants()
        .filter_map(ElementRef::wrap)
        .any(|e| heading_level(e.value().name()).is_some());
    if heading
        || links.len() < MENU_LINKS
        || !links.iter().any(|a| a.text().any(|t| !t.trim().is_empty()))
    {
        return false;
    }
    // The text that is not inside a link.
    let mut outside = el.descendants().filter_map(|n| {
        let in_link = n
            .ancestors()
            .take_while(|a| a.id() != block.id())
            .any(|a| a.value().as_element().is_some_and(|e| e.name() == "a"));
        n.value().as_text().filter(|_| !in_link)
    });
    outside.all(|t| t.chars().all(|c| !c.is_alphanumeric()))
}
